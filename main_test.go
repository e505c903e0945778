package codemode

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests, but for host-call
// goroutines waiting (at most a second) to be reused.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(IdleWorker))
}

// newExecutor builds an executor closed when the test ends.
func newExecutor(t testing.TB, opts ...Option) *Executor {
	t.Helper()
	e, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		assertQuiet(t, e)
		require.NoError(t, e.Close())
	})
	return e
}

// assertQuiet checks that no run of e left anything behind: every slot
// made is back in the pool, holds no live sandbox and no run's host state.
func assertQuiet(t testing.TB, e *Executor) {
	t.Helper()
	if e.isClosed() {
		return
	}
	p := &e.slots
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		made, idle := p.counts()
		if made == idle {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("%d of %d slots are still busy", made-idle, made)
			return
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	quiet := p.retired
	for _, is := range p.idle {
		quiet = append(quiet, is.s)
	}
	for _, s := range quiet {
		assert.False(t, s.alive(), "a slot holds a live sandbox after its run")
		assert.Nil(t, s.call, "a slot holds a run's state after it")
	}
}

// Limits for tests that trip one limit while another could trip too: a
// memory test gets a deadline far beyond its need, a deadline test a
// memory limit far beyond its, so the outcome holds under -race, checked
// mode, ASan and a loaded machine.
func memoryLimits(memory int) Limits { return Limits{Memory: memory, Deadline: 30 * time.Second} }

func deadlineLimits(d time.Duration) Limits { return Limits{Memory: 256 << 20, Deadline: d} }

// execErr asserts err is an *ExecError and returns it.
func execErr(t testing.TB, err error) *ExecError {
	t.Helper()
	require.Error(t, err)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	return ee
}

// ageIdle trims the idle slots as if each had been idle for idleRelease
// (benchmarks of a burst after a pause).
func (p *slotPool) ageIdle() {
	p.mu.Lock()
	for i := range p.idle {
		p.idle[i].since = p.idle[i].since.Add(-idleRelease)
	}
	p.mu.Unlock()
	p.trimIdle()
}
