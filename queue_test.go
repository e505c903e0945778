package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
)

// TestQueueWaitsAreNotTheRunsTime: with a queue timeout, sixty runs — every
// sixth an endless loop, the rest a value, an await or a 20 ms timer —
// under a 300 ms deadline, sixteen at a time on two execution rights, end
// exactly as each would alone: the loops time out, every other run gives
// its value (without it, cheap runs queued behind the loops spent their
// deadlines waiting: timeout or busy).
func TestQueueWaitsAreNotTheRunsTime(t *testing.T) {
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Deadline: 300 * time.Millisecond}),
		codemode.WithConcurrency(2), codemode.WithQueueTimeout(time.Minute))
	require.NoError(t, err)
	defer e.Close()
	const n = 60
	type outcome struct {
		value string
		kind  codemode.ErrorKind
	}
	got := make([]outcome, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		src := []string{"for (;;) {}", fmt.Sprintf("return %d", i), fmt.Sprintf("await null; return %d", i),
			fmt.Sprintf("await new Promise(r => setTimeout(r, 20)); return %d", i)}[map[bool]int{true: 0, false: 1 + i%3}[i%6 == 0]]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, err := e.Run(context.Background(), src)
			var ee *codemode.ExecError
			switch {
			case errors.As(err, &ee):
				got[i] = outcome{kind: ee.Kind}
			case err != nil:
				got[i] = outcome{kind: "other: " + codemode.ErrorKind(err.Error())}
			default:
				got[i] = outcome{value: string(r.Value)}
			}
		})
	}
	wg.Wait()
	for i, o := range got {
		if i%6 == 0 {
			assert.Equal(t, outcome{kind: codemode.KindTimeout}, o, "run %d", i)
		} else {
			assert.Equal(t, outcome{value: fmt.Sprint(i)}, o, "run %d", i)
		}
	}
}

// TestHostCallsOutliveQueueWaits: a run whose two 100 ms host calls fit
// its 1 s deadline with room to spare, but which waits between them
// behind a loop that holds the one execution right for 1 s, succeeds: the
// wait is not its time, and its second call's context has the deadline
// moved by the wait. The loop times out.
func TestHostCallsOutliveQueueWaits(t *testing.T) {
	loopStarted := make(chan struct{})
	var once sync.Once
	var deadlines []time.Duration
	var mu sync.Mutex
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Deadline: time.Second}),
		codemode.WithConcurrency(1), codemode.WithQueueTimeout(time.Minute),
		codemode.WithCapability(codemode.Capability{Name: "started", Func: func(context.Context, json.RawMessage) (any, error) {
			once.Do(func() { close(loopStarted) })
			return nil, nil
		}}),
		codemode.WithCapability(codemode.Capability{Name: "work", Async: true, Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct{ First bool }
			json.Unmarshal(args, &a)
			if a.First {
				select { // the loop takes the right while this call is out
				case <-loopStarted:
				case <-time.After(10 * time.Second):
					return nil, errors.New("the loop never started")
				}
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			d, _ := ctx.Deadline()
			mu.Lock()
			deadlines = append(deadlines, time.Until(d))
			mu.Unlock()
			return 1, nil
		}}))
	require.NoError(t, err)
	defer e.Close()
	type result struct {
		r   *codemode.Result
		err error
	}
	a := make(chan result, 1)
	go func() {
		r, err := e.Run(context.Background(), "return (await work({first: true})) + (await work({first: false}))")
		a <- result{r, err}
	}()
	_, err = e.Run(context.Background(), "started(); for (;;) {}")
	var ee *codemode.ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, codemode.KindTimeout, ee.Kind)
	res := <-a
	require.NoError(t, res.err)
	assert.Equal(t, "2", string(res.r.Value))
	require.Len(t, deadlines, 2)
	for _, d := range deadlines {
		assert.Positive(t, d, "each call's context still had time")
	}
}

// TestQueueTimeout: a run that waits its queue timeout for an execution
// right fails with ErrBusy (kind internal), never a timeout; a caller's
// context deadline still counts wall-clock time.
func TestQueueTimeout(t *testing.T) {
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Deadline: 10 * time.Second}),
		codemode.WithConcurrency(1), codemode.WithQueueTimeout(100*time.Millisecond))
	require.NoError(t, err)
	defer e.Close()
	loop := make(chan error, 1)
	go func() {
		_, err := e.Run(context.Background(), "for (;;) {}")
		loop <- err
	}()
	var ee *codemode.ExecError
	require.Eventually(t, func() bool {
		_, err := e.Run(context.Background(), "return 1")
		return errors.As(err, &ee)
	}, 10*time.Second, time.Millisecond, "a run queued behind the loop")
	assert.Equal(t, codemode.KindInternal, ee.Kind)
	assert.ErrorIs(t, ee, codemode.ErrBusy)
	assert.Contains(t, ee.Message, "it waited 100ms in queues")
	e.Close() // ends the loop
	<-loop

	_, err = codemode.New(codemode.WithQueueTimeout(-1))
	assert.ErrorContains(t, err, "negative queue timeout")
}
