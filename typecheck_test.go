package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeChecker finds a problem wherever a program names "nope", and counts
// its checks; what it was given is kept.
type fakeChecker struct {
	checks atomic.Int32
	last   atomic.Value // TypeCheckInput
	err    error
}

func (f *fakeChecker) CheckProgram(_ context.Context, in TypeCheckInput) ([]TypeDiagnostic, error) {
	f.checks.Add(1)
	f.last.Store(in)
	if f.err != nil {
		return nil, f.err
	}
	var ds []TypeDiagnostic
	for i, line := range strings.Split(in.Program, "\n") {
		if c := strings.Index(line, "nope"); c >= 0 {
			ds = append(ds, TypeDiagnostic{Line: i + 1, Column: c + 1, Code: 2304, Message: "Cannot find name 'nope'."})
		}
	}
	return ds, nil
}

func TestTypeCheckModes(t *testing.T) {
	t.Parallel()
	f := &fakeChecker{}
	var calls atomic.Int32
	e := newExecutor(t, WithTypeCheck(f, TypeCheckEnforce), WithCapability(Capability{Name: "write", Async: true,
		Params:  json.RawMessage(`{"type":"object","properties":{"v":{"type":"number"}}}`),
		Returns: json.RawMessage(`{"type":"boolean"}`),
		Func: func(context.Context, json.RawMessage) (any, error) {
			calls.Add(1)
			return true, nil
		}}))
	ctx := context.Background()

	// Enforce: refused before anything runs, with the problems.
	_, err := e.Run(ctx, "await write({v: 1});\nreturn nope;")
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindTypeError, ee.Kind)
	assert.Equal(t, []TypeDiagnostic{{Line: 2, Column: 8, Code: 2304, Message: "Cannot find name 'nope'."}}, ee.Diagnostics)
	assert.Zero(t, calls.Load(), "no tool ran")
	assert.JSONEq(t, `{"kind":"type_error","name":"run_js","diagnostics":[{"line":2,"column":8,"code":2304,"message":"Cannot find name 'nope'."}]}`, ee.LLMJSON())
	assert.Contains(t, ee.Error(), "2:8 TS2304")
	in := f.last.Load().(TypeCheckInput)
	assert.Contains(t, in.Declarations, "declare function write(")

	// A correct program runs; checking it again is remembered.
	for range 2 {
		res, err := e.Run(ctx, "return await write({v: 2})")
		require.NoError(t, err)
		assert.Equal(t, "true", string(res.Value))
	}
	before := f.checks.Load()
	e.Run(ctx, "return await write({v: 2})")
	assert.Equal(t, before, f.checks.Load(), "the same check is remembered")

	// Warn, per run: it runs, and the result carries the problems.
	res, err := e.Run(WithTypeCheckMode(ctx, TypeCheckWarn), "const nope = 1; return nope")
	require.NoError(t, err)
	assert.Equal(t, "1", string(res.Value))
	require.Len(t, res.Diagnostics, 1)
	// Off, per request.
	ex := e.Execute(ctx, Request{Code: "async () => nope", TypeCheck: TypeCheckOff})
	require.NotNil(t, ex.Err)
	assert.Equal(t, KindJS, ex.Err.Kind, "it ran, and failed as it runs")
	ex = e.Execute(ctx, Request{Code: "async () => { return await svc.get(); }\n// nope", Providers: []Provider{{Name: "svc", Tools: []string{"get"}}},
		TypeCheck: TypeCheckWarn, Dispatch: func(context.Context, string, string, string) (string, error) { return `{"result":3}`, nil }})
	require.Nil(t, ex.Err, ex.Error)
	assert.Equal(t, "3", string(ex.Result))
	require.Len(t, ex.Diagnostics, 1)
	assert.Contains(t, f.last.Load().(TypeCheckInput).Declarations, "declare const svc")

	// A checker that fails is an internal error; none is asked of an
	// executor without one.
	f.err = errors.New("checker down")
	_, err = e.Run(ctx, "return 'not remembered yet'")
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindInternal, ee.Kind)
	plain := newExecutor(t)
	_, err = plain.Run(WithTypeCheckMode(ctx, TypeCheckEnforce), "return 1")
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindInvalidArgs, ee.Kind)
	_, err = New(WithTypeCheck(nil, TypeCheckEnforce))
	assert.Error(t, err)
}

// TestTypeCheckCodeModeTool: what the model reads: a type_error's
// diagnostics when enforced, and beside the result when warned.
func TestTypeCheckCodeModeTool(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		mode TypeCheck
		want string
	}{
		{TypeCheckEnforce, `{"kind":"type_error","name":"run_js","diagnostics":[{"line":1,"column":18,"code":2304,"message":"Cannot find name 'nope'."}]` + noToolRan + `}`},
		{TypeCheckWarn, `{"result":"ran","diagnostics":[{"line":1,"column":18,"code":2304,"message":"Cannot find name 'nope'."}]}`},
	} {
		cm, err := NewCodeModeTool(nil, Limits{}, WithTypeCheck(&fakeChecker{}, tt.mode))
		require.NoError(t, err)
		r, err := cm.Invoke(context.Background(), json.RawMessage(`{"code": "return 'ran'; // nope"}`))
		require.NoError(t, err)
		assert.JSONEq(t, tt.want, string(r.Output))
		cm.Close()
	}
}
