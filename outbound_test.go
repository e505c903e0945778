package codemode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoNetworkByDefault: without an outbound handler there is no fetch.
func TestNoNetworkByDefault(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res, err := e.Run(context.Background(), "return [typeof fetch, typeof Request, typeof Response, typeof Headers, typeof __codemode_fetch]")
	require.NoError(t, err)
	assert.Equal(t, `["undefined","undefined","undefined","undefined","undefined"]`, string(res.Value))
}

// TestFetch: with an outbound handler, fetch reaches a real server on
// loopback through it, and the handler sees every request.
func TestFetch(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Seen-Auth", r.Header.Get("Authorization"))
			fmt.Fprintf(w, `{"method":%q,"q":%q}`, r.Method, r.URL.Query().Get("q"))
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
			w.WriteHeader(201)
			w.Write(b)
		case "/bytes":
			w.Write([]byte{0, 1, 2, 255})
		case "/redirect":
			http.Redirect(w, r, "/json?q=moved", http.StatusFound)
		case "/big":
			w.Write([]byte(strings.Repeat("x", 5000)))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var seen []string
	allow := RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.URL.Host != strings.TrimPrefix(srv.URL, "http://") {
			return nil, errors.New("host not allowed: " + r.URL.Host)
		}
		r.Header.Set("Authorization", "Bearer secret") // credentials the script never sees
		return http.DefaultTransport.RoundTrip(r)
	})
	e := newExecutor(t, WithOutbound(allow), WithLimits(Limits{Payload: 4096, Deadline: 10 * time.Second}))
	ctx := context.Background()
	run := func(code string) string {
		t.Helper()
		res, err := e.Run(ctx, strings.ReplaceAll(code, "$S", srv.URL))
		require.NoError(t, err, code)
		return string(res.Value)
	}
	assert.Equal(t, `[200,true,"application/json","Bearer secret",{"method":"GET","q":"a b"}]`,
		run(`const r = await fetch("$S/json?q=a%20b"); return [r.status, r.ok, r.headers.get('content-type'), r.headers.get('x-seen-auth'), await r.json()]`))
	assert.Equal(t, `[201,"Created","text/plain;charset=UTF-8","héllo"]`,
		run(`const r = await fetch("$S/echo", {method: 'post', body: 'héllo'}); return [r.status, r.statusText, r.headers.get('content-type'), await r.text()]`))
	assert.Equal(t, `[0,1,2,255]`, run(`const r = await fetch(new Request("$S/bytes")); return [...await r.bytes()]`))
	assert.Equal(t, `[true,"moved"]`, run(`const r = await fetch("$S/redirect"); return [r.redirected, (await r.json()).q]`))
	assert.Equal(t, `[404,false]`, run(`const r = await fetch("$S/nope"); return [r.status, r.ok]`))
	assert.Equal(t, `["TypeError","fetch failed","host not allowed: example.com"]`,
		run(`try { await fetch("http://example.com/") } catch (e) { return [e.name, e.message, e.cause.message.replace(/^.*?: /, '').replace(/^.*: host/, 'host')] }`))
	assert.Equal(t, `"fetch failed"`, run(`try { await fetch("$S/big") } catch (e) { return e.message }`), "the response body is bounded by the payload limit")
	assert.Equal(t, `"AbortError"`, run(`const c = new AbortController(); c.abort(); try { await fetch("$S/json", {signal: c.signal}) } catch (e) { return e.name }`))
	assert.Equal(t, `["a=1","b"]`, run(`const h = new Headers([['B', 'b'], ['a', '1']]); return [new URLSearchParams({a: 1}).toString(), h.get('b')]`))
	assert.Equal(t, `{"x":1}`, run(`return await Response.json({x: 1}).json()`))
	mu.Lock()
	assert.Contains(t, seen, "GET /redirect")
	assert.Contains(t, seen, "GET /json", "the redirect's hop went through the handler too")
	mu.Unlock()

	// Execute: the request's handler, and none without one.
	x := newExecutor(t)
	res := x.Execute(ctx, Request{Code: "async () => typeof fetch"})
	assert.Equal(t, `"undefined"`, result(t, res))
	res = x.Execute(ctx, Request{Code: strings.ReplaceAll(`async () => (await fetch("$S/json?q=x")).json()`, "$S", srv.URL), Outbound: allow})
	assert.Equal(t, `{"method":"GET","q":"x"}`, result(t, res))
}

// TestFetchCancelledWithTheRun: a request in flight ends with the run.
func TestFetchCancelledWithTheRun(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	done := make(chan error, 1)
	slow := RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		close(started)
		<-r.Context().Done()
		done <- r.Context().Err()
		return nil, r.Context().Err()
	})
	e := newExecutor(t, WithOutbound(slow), WithLimits(Limits{Deadline: 200 * time.Millisecond}))
	// However the request's end and the deadline meet, the run is out of
	// time: a script that catches the failure spins until killed.
	_, err := e.Run(context.Background(), "try { await fetch('http://h.test/') } catch {} for (;;) {}")
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, KindTimeout, ee.Kind)
	<-started
	select {
	case err := <-done: // the deadline's, or the run's end
		assert.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled), "%v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the request outlived its run")
	}
}

// TestCodeModeToolSaysFetch: the description tells the model fetch works
// only when the host grants the network.
func TestCodeModeToolSaysFetch(t *testing.T) {
	t.Parallel()
	off, err := NewCodeModeTool(nil, Limits{})
	require.NoError(t, err)
	defer off.Close()
	assert.Contains(t, off.Description(), "no network")
	assert.NotContains(t, off.Description(), "fetch")
	on, err := NewCodeModeTool(nil, Limits{}, WithOutbound(RoundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("no")
	})))
	require.NoError(t, err)
	defer on.Close()
	assert.Contains(t, on.Description(), "fetch reaches the network the host allows")
}
