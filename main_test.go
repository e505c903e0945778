package codemode

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newExecutor builds an executor closed when the test ends.
func newExecutor(t testing.TB, opts ...Option) *Executor {
	t.Helper()
	e, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// execErr asserts err is an *ExecError and returns it.
func execErr(t testing.TB, err error) *ExecError {
	t.Helper()
	require.Error(t, err)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	return ee
}
