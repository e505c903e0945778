//go:build cgo

package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// RoundTripFunc is a function from request to response, used as an
// [http.RoundTripper] for [WithOutbound] and [Request].Outbound: it may
// allowlist hosts, inject credentials, record or answer by itself.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f(req).
func (f RoundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// WithOutbound grants the executor's sandboxes the network through rt:
// fetch, Request, Response and Headers exist in every run, and every
// request a script makes (each hop of a redirect too) goes to rt, whose
// answer or error is the script's. A request's body is bounded by the
// payload limit as a capability's arguments are, a response's body by
// [Limits].Payload; the call counts against the run's deadline and is
// cancelled with the run (the request's context). Without it (the
// default) a sandbox has no fetch and no network at all. Execute may set
// its own handler per request ([Request].Outbound).
func WithOutbound(rt http.RoundTripper) Option {
	return func(c *config) error {
		c.outbound = rt
		return nil
	}
}

// fetchCapabilityName is the internal capability that serves fetch; the
// sandbox takes it off the global object (bridge_web.c).
const fetchCapabilityName = "__codemode_fetch"

// outboundKey carries a run's handler in its context, to the fetch
// capability's handler.
type outboundKey struct{}

// fetchTable is t with the fetch capability added: one per capability
// set, made on first use and freed with the executor.
func (e *Executor) fetchTable(t *capTable) *capTable {
	t.fetchOnce.Do(func() {
		caps := append(t.caps[:len(t.caps):len(t.caps)], Capability{Name: fetchCapabilityName, Async: true,
			Func: fetchHandler(int64(e.limits.Payload))})
		t.fetch = e.derivedTable(caps)
	})
	return t.fetch
}

// fetchRequest is what web.js's fetch sends.
type fetchRequest struct {
	Method   string      `json:"method"`
	URL      string      `json:"url"`
	Headers  [][2]string `json:"headers"`
	Body     any         `json:"body"`
	Redirect string      `json:"redirect"`
}

// errRedirect is fetch's redirect: "error" meeting a redirect.
var errRedirect = errors.New("the response redirected, and the request's redirect mode is \"error\"")

// fetchHandler serves fetch with the run's outbound handler.
func fetchHandler(limit int64) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		rt, _ := ctx.Value(outboundKey{}).(http.RoundTripper)
		if rt == nil {
			return nil, errors.New("the host grants no network")
		}
		var fr fetchRequest
		if err := json.Unmarshal(args, &fr); err != nil {
			return nil, fmt.Errorf("a malformed request: %v", err)
		}
		var body io.Reader = http.NoBody
		if fr.Body != nil {
			raw, _ := json.Marshal(fr.Body)
			v, err := ParseForDispatch(string(raw))
			b, ok := v.([]byte)
			if err != nil || !ok {
				return nil, errors.New("a malformed request body")
			}
			body = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, fr.Method, fr.URL, body)
		if err != nil {
			return nil, err
		}
		for _, h := range fr.Headers {
			req.Header.Add(h[0], h[1])
		}
		client := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
			switch fr.Redirect {
			case "manual":
				return http.ErrUseLastResponse
			case "error":
				return errRedirect
			}
			return nil
		}}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return nil, err
		}
		if int64(len(data)) > limit {
			return nil, fmt.Errorf("the response body is over the payload limit of %d bytes", limit)
		}
		names := make([]string, 0, len(resp.Header))
		for k := range resp.Header {
			names = append(names, k)
		}
		sort.Strings(names)
		headers := [][2]string{}
		for _, k := range names {
			for _, v := range resp.Header[k] {
				headers = append(headers, [2]string{strings.ToLower(k), v})
			}
		}
		url := fr.URL
		if resp.Request != nil && resp.Request.URL != nil {
			url = resp.Request.URL.String()
		}
		return map[string]any{
			"status":     resp.StatusCode,
			"statusText": strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode))),
			"url":        url,
			"redirected": url != fr.URL,
			"headers":    headers,
			"body":       data,
		}, nil
	}
}

// fetchState is what a capability table keeps for fetch.
type fetchState struct {
	fetchOnce sync.Once
	fetch     *capTable
}
