//go:build cgo

package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailurePlace: a tool's failure that escapes says which call failed
// (the line and column of its name, in the model's text), and a JS error
// the expression that threw; on Run, Execute and a session alike, in the
// Go fields and in the JSON a model reads.
func TestFailurePlace(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithCapability(failing("fail", "db down", false)), WithCapability(failing("afail", "async down", true)),
		WithCapability(Capability{Name: "get_user", Async: true, Func: fn(func(_ context.Context, args json.RawMessage) (any, error) {
			if strings.Contains(string(args), `"id":2`) {
				return nil, errors.New("no such user")
			}
			return map[string]any{"name": "ann"}, nil
		})}))
	ctx := context.Background()
	place := func(t *testing.T, err error) (ErrorKind, int, int) {
		t.Helper()
		ee := execErr(t, err)
		return ee.Kind, ee.Line, ee.Column
	}
	runs := []struct {
		name, script string
		kind         ErrorKind
		line, col    int
	}{
		{"the second of two calls", "const a = await get_user({id: 1});\nconst b = await get_user({id: 2});\nreturn [a, b]", KindCapability, 2, 17},
		{"in a helper called twice", "function load(id) {\n  return get_user({id})\n}\nawait load(1)\nawait load(2)", KindCapability, 2, 10},
		{"Promise.all", "return await Promise.all([1, 2, 3].map((id) =>\n    get_user({id})))", KindCapability, 2, 5},
		{"sync, caught and rethrown", "let saved\ntry { fail({}) } catch (e) { saved = e }\nthrow saved", KindCapability, 2, 7},
		{"async, no argument", "  await afail()", KindCapability, 1, 9},
		{"the property read", "const a = {};\n  return a.nope.deeper;", KindJS, 2, 17},
		{"the name not defined", "const x = 1\nreturn x + nope", KindJS, 2, 12},
	}
	for _, tt := range runs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Run(ctx, tt.script)
			kind, line, col := place(t, err)
			assert.Equal(t, []any{tt.kind, tt.line, tt.col}, []any{kind, line, col}, tt.script)
			assert.Contains(t, execErr(t, err).LLMJSON(), `,"line":`)
		})
	}
	t.Run("an alias has no place", func(t *testing.T) {
		_, err := e.Run(ctx, "const g = fail\ng({})")
		ee := execErr(t, err)
		assert.Equal(t, KindCapability, ee.Kind)
		assert.Equal(t, 0, ee.Line)
		assert.Equal(t, `{"kind":"capability","name":"run_js","capability":"fail","message":"db down"}`, ee.LLMJSON())
	})
	t.Run("a shadowed name is no tool", func(t *testing.T) {
		_, err := e.Run(ctx, "const fail = () => { throw new Error('mine') }\nfail()")
		assert.Equal(t, `{"kind":"js","name":"run_js","message":"Error: mine\n    at fail (script.js:1:32)\n    at <anonymous> (script.js:2:1)","line":1,"column":32}`,
			execErr(t, err).LLMJSON())
	})

	store := func(_ context.Context, _, tool, args string) (string, error) {
		if strings.Contains(args, "2") {
			return `{"error": "no such user"}`, nil
		}
		return `{"result": {"name": "ann"}}`, nil
	}
	t.Run("Execute: the issue's program", func(t *testing.T) {
		res := e.Execute(ctx, Request{Code: "async () => {\n  const a = await store.get({id: 1});\n  const b = await store.get({id: 2});\n  return {a, b};\n}",
			Providers: []Provider{{Name: "store"}}, Dispatch: store})
		require.NotNil(t, res.Err)
		assert.Equal(t, `{"kind":"capability","name":"execute","capability":"store.get","message":"no such user","line":3,"column":25}`, res.Err.LLMJSON())
		assert.Equal(t, "codemode: execute: capability store.get failed at 3:25: no such user", res.Err.Error())
	})
	t.Run("Execute: the protocol's row", func(t *testing.T) {
		res := e.Execute(ctx, Request{Code: "async () => await store.x()", Providers: []Provider{{Name: "store"}},
			Dispatch: func(context.Context, string, string, string) (string, error) { return "", errors.New("db down") }})
		require.NotNil(t, res.Err)
		assert.Equal(t, `{"kind":"capability","name":"execute","capability":"store.x","message":"db down","line":1,"column":25}`, res.Err.LLMJSON())
	})
	t.Run("a session's step", func(t *testing.T) {
		s, err := e.NewSession()
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Run(ctx, "const ids = [1, 2]")
		require.NoError(t, err)
		_, err = s.Run(ctx, "for (const id of ids)\n  await get_user({id})")
		kind, line, col := place(t, err)
		assert.Equal(t, []any{KindCapability, 2, 9}, []any{kind, line, col})
	})
}

// TestFailurePlaceJSON: the position round-trips through the JSON, and a
// kind that has none writes none.
func TestFailurePlaceJSON(t *testing.T) {
	t.Parallel()
	in := &ExecError{Kind: KindCapability, Name: "execute", Capability: "store.get", Message: "no", Line: 3, Column: 25}
	b, err := in.MarshalJSON()
	require.NoError(t, err)
	var out ExecError
	require.NoError(t, out.UnmarshalJSON(b))
	assert.Equal(t, *in, out)
	to := &ExecError{Kind: KindTimeout, Name: "run_js", DeadlineMS: 5, Line: 1, Column: 1}
	assert.Equal(t, `{"kind":"timeout","name":"run_js","deadline_ms":5}`, to.LLMJSON())
}
