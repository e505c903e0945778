//go:build cgo

// Package spectest holds the examples of the providers-and-dispatch
// protocol (docs/PROTOCOL.md) with their expected outputs, run against any
// codemode.Runner: the local executor (the root package's tests) and the
// daemon's remote client (remote's), so the two are held to the same
// outputs.
package spectest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
)

type dispatchCall struct{ Provider, Tool, ArgsJSON string }

// recorder is a DispatchFunc answering {"result": null} that records calls.
type recorder struct {
	mu    sync.Mutex
	calls []dispatchCall
}

func (r *recorder) dispatch(_ context.Context, provider, tool, argsJSON string) (string, error) {
	r.mu.Lock()
	r.calls = append(r.calls, dispatchCall{provider, tool, argsJSON})
	r.mu.Unlock()
	return `{"result":null}`, nil
}

func (r *recorder) seen() []dispatchCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]dispatchCall(nil), r.calls...)
}

// result asserts a successful Execute and returns its result JSON.
func result(t *testing.T, res codemode.ExecuteResult) string {
	t.Helper()
	require.Empty(t, res.Error)
	require.NotNil(t, res.Logs)
	return string(res.Result)
}

// Examples runs every example of the protocol against r.
func Examples(t *testing.T, r codemode.Runner) {
	ctx := context.Background()
	rec := &recorder{}

	t.Run("awaiting a provider yields the proxy", func(t *testing.T) {
		res := r.Execute(ctx, codemode.Request{
			Code:      "async () => { const v = await store; return typeof v }",
			Providers: []codemode.Provider{{Name: "store", Tools: []string{"x"}}},
			Dispatch:  rec.dispatch,
		})
		assert.Equal(t, `"object"`, result(t, res))
		assert.Equal(t, []string{}, res.Logs)
	})

	t.Run("values that cross a tool call", func(t *testing.T) {
		rec := &recorder{}
		var logged []string
		res := r.Execute(ctx, codemode.Request{
			Code: `async () => {
    await store.noArgs()
    await store.two('ada', 7)
    await store.obj({ id: 1, deep: { a: [1, 2] } })
    await store.bytes(new Uint8Array([1, 2, 3]))
    return 'sent'
  }`,
			Providers: []codemode.Provider{{Name: "store", Tools: []string{"noArgs"}}},
			Dispatch: func(ctx context.Context, provider, tool, argsJSON string) (string, error) {
				logged = append(logged, fmt.Sprintf("{ provider: '%s', tool: '%s', argsJson: '%s' }", provider, tool, argsJSON))
				return rec.dispatch(ctx, provider, tool, argsJSON)
			},
		})
		assert.Equal(t, `"sent"`, result(t, res))
		assert.Equal(t, []string{
			`{ provider: 'store', tool: 'noArgs', argsJson: '[]' }`,
			`{ provider: 'store', tool: 'two', argsJson: '["ada",7]' }`,
			`{ provider: 'store', tool: 'obj', argsJson: '[{"id":1,"deep":{"a":[1,2]}}]' }`,
			`{ provider: 'store', tool: 'bytes', argsJson: '[{"__executor_binary_v1__":"Uint8Array","data":"AQID"}]' }`,
		}, logged)
	})

	t.Run("positionalArgs false", func(t *testing.T) {
		rec := &recorder{}
		res := r.Execute(ctx, codemode.Request{
			Code:      "async () => { await store.find({ id: 7 }); await store.all(); return 'ok' }",
			Providers: []codemode.Provider{{Name: "store", Tools: []string{"find"}, ObjectArgs: true}},
			Dispatch:  rec.dispatch,
		})
		assert.Equal(t, `"ok"`, result(t, res))
		assert.Equal(t, []dispatchCall{{"store", "find", `{"id":7}`}, {"store", "all", `{}`}}, rec.seen())
		args, err := codemode.ParseDispatchArguments(`{"id":7}`)
		require.NoError(t, err)
		assert.Equal(t, []any{map[string]any{"id": float64(7)}}, args)
	})

	t.Run("a Uint8Array returned from a tool arrives as a Uint8Array", func(t *testing.T) {
		latch := codemode.NewLatch()
		defer latch.Close()
		res := r.Execute(ctx, codemode.Request{
			Code: `async () => {
				const back = await store.reverse(new Uint8Array([1, 2, 3]))
				return [back instanceof Uint8Array, Array.from(back)]
			}`,
			Providers: []codemode.Provider{{Name: "store"}},
			Dispatch: codemode.EnvelopeDispatch(latch, func(ctx context.Context, provider, tool, argsJSON string) (any, error) {
				args, err := codemode.ParseDispatchArguments(argsJSON)
				if err != nil {
					return nil, err
				}
				b := args[0].([]byte)
				out := make([]byte, len(b))
				for i := range b {
					out[i] = b[len(b)-1-i]
				}
				return out, nil
			}),
		})
		assert.Equal(t, `[true,[3,2,1]]`, result(t, res))
	})

	t.Run("stringifyForDispatch", func(t *testing.T) {
		s, err := codemode.StringifyForDispatch([]byte{1, 2, 3})
		require.NoError(t, err)
		assert.Equal(t, `{"__executor_binary_v1__":"Uint8Array","data":"AQID"}`, s)
		// A Buffer-shaped value is an ordinary object: it gets no tag.
		s, err = codemode.StringifyForDispatch(map[string]any{"type": "Buffer", "data": []int{1, 2, 3}})
		require.NoError(t, err)
		assert.Equal(t, `{"data":[1,2,3],"type":"Buffer"}`, s)
	})

	t.Run("dispatch worth copying", func(t *testing.T) {
		latch := codemode.NewLatch()
		defer latch.Close()
		tools := map[string]func([]any) any{
			"listUsers": func([]any) any { return []string{"ada", "bob"} },
			"findUser":  func(a []any) any { return map[string]any{"name": a[0]} },
		}
		res := r.Execute(ctx, codemode.Request{
			Code:      "async () => [await store.listUsers(), await store.findUser('ada')]",
			Providers: []codemode.Provider{{Name: "store", Tools: []string{"listUsers", "findUser"}}},
			Dispatch: codemode.EnvelopeDispatch(latch, func(ctx context.Context, provider, tool, argsJSON string) (any, error) {
				if provider != "store" {
					return nil, codemode.ToolNotFoundError{Tool: tool}
				}
				handler, ok := tools[tool]
				if !ok {
					return nil, codemode.ToolNotFoundError{Tool: tool}
				}
				args, err := codemode.ParseDispatchArguments(argsJSON)
				if err != nil {
					return nil, err
				}
				return handler(args), nil
			}),
		})
		assert.Equal(t, `[["ada","bob"],{"name":"ada"}]`, result(t, res))
	})

	t.Run("fire and forget", func(t *testing.T) {
		// The sample's finally closes the latch the moment Execute returns;
		// the call left the sandbox before that, so its responder runs (a
		// Go responder runs on its own goroutine, which may reach the
		// latch after Close) and is still running when Execute returns.
		started, release := make(chan struct{}), make(chan struct{})
		latch := codemode.NewLatch()
		res := func() codemode.ExecuteResult {
			defer latch.Close()
			return r.Execute(ctx, codemode.Request{
				Code:      "async () => { store.fireAndForget(); return 'returned early' }",
				Providers: []codemode.Provider{{Name: "store", Tools: []string{"fireAndForget"}}},
				Dispatch: codemode.EnvelopeDispatch(latch, func(ctx context.Context, provider, tool, argsJSON string) (any, error) {
					close(started)
					<-release // a round trip to a database, answered after Execute returned
					return nil, nil
				}),
			})
		}()
		assert.Equal(t, `"returned early"`, result(t, res))
		assert.Equal(t, []string{}, res.Logs)
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the responder of a call made before the latch closed never ran")
		}
		close(release)
	})

	t.Run("undeclared names reach the dispatch", func(t *testing.T) {
		res := r.Execute(ctx, codemode.Request{
			Code:      "async () => await __dispatch('secrets', 'read', '[]')",
			Providers: []codemode.Provider{{Name: "store", Tools: []string{"listOrders"}}},
			Dispatch: func(ctx context.Context, provider, tool, argsJSON string) (string, error) {
				b, err := json.Marshal(struct {
					Result any `json:"result"`
				}{struct {
					Provider string `json:"provider"`
					Tool     string `json:"tool"`
					ArgsJSON string `json:"argsJson"`
				}{provider, tool, argsJSON}})
				return string(b), err
			},
		})
		assert.Equal(t, `"{\"result\":{\"provider\":\"secrets\",\"tool\":\"read\",\"argsJson\":\"[]\"}}"`, result(t, res))
	})

	t.Run("a failure reads as an Error", func(t *testing.T) {
		latch := codemode.NewLatch()
		defer latch.Close()
		res := r.Execute(ctx, codemode.Request{
			Code: `async () => {
    try {
      return await store.nope()
    } catch (failure) {
      return { name: failure.name, message: failure.message }
    }
  }`,
			Providers: []codemode.Provider{{Name: "store", Tools: []string{"listUsers"}}},
			Dispatch: codemode.EnvelopeDispatch(latch, func(ctx context.Context, provider, tool, argsJSON string) (any, error) {
				return nil, codemode.ToolNotFoundError{Tool: tool}
			}),
		})
		assert.Equal(t, `{"name":"Error","message":"Tool \"nope\" not found"}`, result(t, res))
	})

	t.Run("outside the envelope", func(t *testing.T) {
		res := r.Execute(ctx, codemode.Request{
			Code:      "async () => { try { return await store.x() } catch (failure) { return failure.message } }",
			Providers: []codemode.Provider{{Name: "store", Tools: []string{"x"}}},
			Dispatch:  func(context.Context, string, string, string) (string, error) { return `"just a string"`, nil },
		})
		assert.Equal(t, `"The dispatch answered outside the result envelope."`, result(t, res))
	})

	t.Run("prelude", func(t *testing.T) {
		res := r.Execute(ctx, codemode.Request{
			Code:      "async () => store.helpers.twice(21)",
			Providers: []codemode.Provider{{Name: "store", Tools: []string{"listUsers"}, Prelude: "store.helpers = { twice: (n) => n * 2 }"}},
			Dispatch:  rec.dispatch,
		})
		assert.Equal(t, `42`, result(t, res))
	})

	t.Run("proxySource", func(t *testing.T) {
		res := r.Execute(ctx, codemode.Request{
			Code: "async () => await api.v1.users.list()",
			Providers: []codemode.Provider{{
				Name:  "api",
				Tools: []string{"v1.users.list"},
				ProxySource: `const api = { v1: { users: { list: async () => {
        const json = await __dispatch('api', 'v1.users.list', __stringifyForDispatch([]))
        const data = __parseForDispatch(json)
        if (data.error) throw new Error(data.error)
        return data.result
      } } } };`,
			}},
			Dispatch: func(_ context.Context, provider, tool, _ string) (string, error) {
				b, err := json.Marshal(map[string]string{"result": provider + "." + tool + " served"})
				return string(b), err
			},
		})
		assert.Equal(t, `"api.v1.users.list served"`, result(t, res))
	})

	t.Run("names a provider may not take", func(t *testing.T) {
		tests := []struct {
			providers []codemode.Provider
			want      string
		}{
			{[]codemode.Provider{{Name: "console", Tools: []string{"x"}}},
				`Provider name "console" is reserved. Give the provider a name the entry scope does not bind.`},
			{[]codemode.Provider{{Name: "my-store", Tools: []string{"x"}}},
				`Provider name "my-store" must be ASCII letters, digits, underscore and dollar, and must not start with a digit.`},
			{[]codemode.Provider{{Name: "class", Tools: []string{"x"}}},
				`Provider name "class" is on the list this executor refuses: every ECMAScript reserved word, the names strict mode reserves, and async. Pick a name outside it.`},
			{[]codemode.Provider{{Name: "store", Tools: []string{"x"}}, {Name: "store", Tools: []string{"y"}}},
				`Provider name "store" is declared twice. Give each provider its own name.`},
		}
		for _, tt := range tests {
			rec := &recorder{}
			res := r.Execute(ctx, codemode.Request{Code: "async () => { await store.x(); return 1 }", Providers: tt.providers, Dispatch: rec.dispatch})
			assert.Equal(t, tt.want, res.Error)
			assert.Nil(t, res.Result, "a refused request has no result")
			assert.Equal(t, []string{}, res.Logs)
			assert.Empty(t, rec.seen(), "a refused request calls nothing")
		}
	})

	t.Run("a provider that shadows fetch", func(t *testing.T) {
		res := r.Execute(ctx, codemode.Request{
			Code:      `async () => { try { const r = await fetch('https://example.com'); return 'reached ' + r.status } catch (failure) { return failure.message } }`,
			Providers: []codemode.Provider{{Name: "fetch", Tools: []string{"x"}}},
			Dispatch:  rec.dispatch,
		})
		// The specification quotes V8's wording, "fetch is not a function";
		// QuickJS-ng words the same TypeError "not a function".
		assert.Equal(t, `"not a function"`, result(t, res))
		res = r.Execute(ctx, codemode.Request{
			Code:      `async () => typeof fetch`,
			Providers: []codemode.Provider{{Name: "fetch", Tools: []string{"x"}}},
			Dispatch:  rec.dispatch,
		})
		assert.Equal(t, `"object"`, result(t, res))
	})
}
