// Package fakeapi is the stand-in vendor API of the SDK adapters' tests: an
// http.Handler answering each request with the next canned JSON reply and
// keeping every request body, so a test can check exactly what the SDK
// sent on the wire.
package fakeapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Server replies with Replies in turn and records the request bodies.
type Server struct {
	mu      sync.Mutex
	replies []string
	bodies  []map[string]any
}

// New returns a server that answers with replies, one per request.
func New(replies ...string) *Server { return &Server{replies: replies} }

// ServeHTTP answers with the next reply (500 when none is left).
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(b, &body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	if len(f.replies) == 0 {
		f.mu.Unlock()
		http.Error(w, `{"error":"no reply left"}`, http.StatusInternalServerError)
		return
	}
	reply := f.replies[0]
	f.replies = f.replies[1:]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, reply)
}

// Bodies returns the request bodies received so far.
func (f *Server) Bodies() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

// Overlap returns a function each of n concurrent callers calls once: it
// returns nil when all n have arrived, and an error if they have not
// within 10 s — proof that n tool calls ran at once, not one after
// another.
func Overlap(n int) func() error {
	var wg sync.WaitGroup
	wg.Add(n)
	all := make(chan struct{})
	go func() {
		wg.Wait()
		close(all)
	}()
	return func() error {
		wg.Done()
		select {
		case <-all:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the other calls did not start: the calls ran one after another")
		}
	}
}

// ChatToolCalls is a Chat Completions response whose one choice is an
// assistant message making the given tool calls (their JSON array).
func ChatToolCalls(toolCalls string) string {
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":` +
		toolCalls + `}}]}`
}

// ChatToolCall is one function tool call, its arguments encoded for the
// wire (a JSON string holding JSON).
func ChatToolCall(id, name string, args any) string {
	a, _ := json.Marshal(args)
	quoted, _ := json.Marshal(string(a))
	return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(quoted) + `}}`
}
