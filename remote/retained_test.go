package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// TestRetainedRemote: RetainHandles through the daemon behaves as in
// process: the handles the program returned are called (state kept between
// calls), a throw is the call's ExecError and the sandbox lives on, logs
// come on request, and Close ends it.
func TestRetainedRemote(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{})
	local, err := codemode.New()
	require.NoError(t, err)
	defer local.Close()
	for _, r := range []codemode.Runner{local, dial(t, addr)} {
		ctx := context.Background()
		res := r.Execute(ctx, codemode.Request{RetainHandles: true,
			Code: "async () => { let n = 0; return { inc: (k) => { console.log('inc', k); return n += k }, boom: () => { throw new Error('no') } } }"})
		require.Empty(t, res.Error, "%T", r)
		require.NotNil(t, res.Retained, "%T", r)
		v, err := codemode.ParseForDispatch(string(res.Result))
		require.NoError(t, err)
		obj := v.(map[string]any)
		inc, boom := obj["inc"].(codemode.Handle), obj["boom"].(codemode.Handle)
		got, err := res.Retained.Call(ctx, inc, 5)
		require.NoError(t, err, "%T", r)
		assert.Equal(t, float64(5), got)
		got, err = res.Retained.Call(ctx, inc, 2)
		require.NoError(t, err)
		assert.Equal(t, float64(7), got, "%T: state kept between calls", r)
		_, err = res.Retained.Call(ctx, boom)
		var ee *codemode.ExecError
		require.ErrorAs(t, err, &ee, "%T", r)
		assert.Equal(t, codemode.KindJS, ee.Kind)
		got, err = res.Retained.Call(ctx, inc, 1)
		require.NoError(t, err, "%T: the sandbox lives on after a throw", r)
		assert.Equal(t, float64(8), got)
		assert.Equal(t, []string{"inc 5", "inc 2", "inc 1"}, res.Retained.Logs(), "%T", r)
		assert.Nil(t, res.Retained.Err())
		require.NoError(t, res.Retained.Close())
		<-res.Retained.Done()
		_, err = res.Retained.Call(ctx, inc, 1)
		assert.True(t, errors.Is(err, codemode.ErrRetainedClosed), "%T: %v", r, err)
	}
}

// TestRetainedClientLeaves: a client that goes away with a retained
// sandbox open frees it on the daemon (nothing stays in flight).
func TestRetainedClientLeaves(t *testing.T) {
	reg := prometheus.NewRegistry()
	addr, _ := daemon(t, remote.ServerOptions{Metrics: remote.NewMetrics(reg)})
	inFlight := func() float64 { return gauge(t, reg, "codemode_programs_in_flight") }
	c, err := remote.Dial(addr)
	require.NoError(t, err)
	res := c.Execute(context.Background(), codemode.Request{RetainHandles: true, Code: "async () => ({ f: () => 1 })"})
	require.Empty(t, res.Error)
	require.NotNil(t, res.Retained)
	assert.Equal(t, float64(1), inFlight(), "the retained sandbox holds its place")
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return inFlight() == 0 }, 10*time.Second, 10*time.Millisecond)
	<-res.Retained.Done()
	assert.ErrorIs(t, res.Retained.Err(), codemode.ErrRetainedClosed)
}
