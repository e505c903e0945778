package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// records is the host's tools: reads answer, writes are kept.
type records struct {
	mu     sync.Mutex
	reads  int
	writes []string
}

func (r *records) dispatch(_ context.Context, _, tool, args string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tool == "read" {
		r.reads++
		return `{"result":{"total":10}}`, nil
	}
	r.writes = append(r.writes, args)
	return `{"result":"written"}`, nil
}

var hostGovernance = codemode.Governance{
	Tools: map[string]codemode.ToolPolicy{"db.write": {RequiresApproval: true}},
	Key:   bytes.Repeat([]byte("h"), 32), Encrypt: true,
}

// TestPausedAcrossDaemons: a program paused on one daemon resumes on
// another; the key stays with the client (the daemons never see it, and
// the continuation is sealed by it).
func TestPausedAcrossDaemons(t *testing.T) {
	a, _ := daemon(t, remote.ServerOptions{})
	b, _ := daemon(t, remote.ServerOptions{})
	ca := dial(t, a, remote.WithGovernance(hostGovernance))
	cb := dial(t, b, remote.WithGovernance(hostGovernance))
	rec := &records{}
	req := codemode.Request{
		Code: `async () => {
			let sum = 0
			for (const id of [1, 2, 3]) sum += (await db.read(id)).total
			try { return {sum, wrote: await db.write({sum})} } catch (e) { return {sum, refused: e.message} }
		}`,
		Providers: []codemode.Provider{{Name: "db", Tools: []string{"read", "write"}}},
		Dispatch:  rec.dispatch,
	}
	res := ca.Execute(context.Background(), req)
	require.Empty(t, res.Error)
	require.NotNil(t, res.Paused)
	assert.Equal(t, "db.write", res.Paused.Tool)
	assert.Equal(t, 3, res.Paused.Completed)
	assert.Equal(t, 3, rec.reads)
	assert.Empty(t, rec.writes)
	_, err := codemode.InspectContinuation(hostGovernance.Key, res.Paused.Continuation)
	require.NoError(t, err, "sealed with the host's key")

	out := cb.Resume(context.Background(), res.Paused.Continuation, codemode.Approve(), rec.dispatch)
	require.Empty(t, out.Error)
	assert.JSONEq(t, `{"sum":30,"wrote":"written"}`, string(out.Result))
	assert.Equal(t, 3, rec.reads, "no read runs again")
	assert.Equal(t, []string{`[{"sum":30}]`}, rec.writes)

	out = cb.Resume(context.Background(), res.Paused.Continuation, codemode.Reject("no"), rec.dispatch)
	assert.JSONEq(t, `{"sum":30,"refused":"tool \"db.write\" was rejected: no"}`, string(out.Result))

	out = cb.Resume(context.Background(), res.Paused.Continuation, codemode.ApproveWith(json.RawMessage(`[{"sum":1}]`)), rec.dispatch)
	require.Empty(t, out.Error)
	assert.Equal(t, []string{`[{"sum":30}]`, `[{"sum":1}]`}, rec.writes)

	// Tampered: refused by the client before anything travels.
	bad := bytes.Clone(res.Paused.Continuation)
	bad[len(bad)/2] ^= 1
	out = cb.Resume(context.Background(), bad, codemode.Approve(), rec.dispatch)
	assert.ErrorIs(t, out.Err, codemode.ErrContinuation)
	other := dial(t, b, remote.WithGovernance(codemode.Governance{Key: bytes.Repeat([]byte("o"), 32)}))
	out = other.Resume(context.Background(), res.Paused.Continuation, codemode.Approve(), rec.dispatch)
	assert.ErrorIs(t, out.Err, codemode.ErrContinuation, "another host's key")
	assert.Len(t, rec.writes, 2)
}

// TestPausedRunAcrossDaemons: the same for a Run script and the client's
// capabilities.
func TestPausedRunAcrossDaemons(t *testing.T) {
	a, _ := daemon(t, remote.ServerOptions{})
	b, _ := daemon(t, remote.ServerOptions{})
	var mu sync.Mutex
	var sent []string
	send := codemode.Capability{Name: "send", Async: true, Func: func(_ context.Context, args json.RawMessage) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, string(args))
		return "sent", nil
	}}
	g := codemode.Governance{Tools: map[string]codemode.ToolPolicy{"send": {RequiresApproval: true}}, Key: hostGovernance.Key}
	ca := dial(t, a, remote.WithGovernance(g), remote.WithCapability(send))
	cb := dial(t, b, remote.WithGovernance(g), remote.WithCapability(send))
	res, err := ca.Run(context.Background(), `console.log('about to send'); return await send({to: 'ada'})`)
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	assert.Equal(t, "send", res.Paused.Tool)
	out := cb.Resume(context.Background(), res.Paused.Continuation, codemode.Approve(), nil)
	require.Empty(t, out.Error)
	assert.Equal(t, `"sent"`, string(out.Result))
	assert.Equal(t, []string{"about to send"}, out.Logs)
	assert.Equal(t, []string{`{"to":"ada"}`}, sent)
}

// TestGovernedPoliciesRemote: the per-tool limits hold on the daemon.
func TestGovernedPoliciesRemote(t *testing.T) {
	a, _ := daemon(t, remote.ServerOptions{})
	c := dial(t, a, remote.WithGovernance(codemode.Governance{Tools: map[string]codemode.ToolPolicy{"db.read": {Budget: 2}}}))
	rec := &records{}
	res := c.Execute(context.Background(), codemode.Request{
		Code:      `async () => { const out = []; for (let i = 0; i < 3; i++) { try { await db.read(i); out.push('ok') } catch (e) { out.push(e.message) } } return out }`,
		Providers: []codemode.Provider{{Name: "db", Tools: []string{"read"}}}, Dispatch: rec.dispatch,
	})
	require.Empty(t, res.Error)
	assert.JSONEq(t, `["ok","ok","tool \"db.read\" is over its budget of 2 calls per run"]`, string(res.Result))
	assert.Equal(t, 2, rec.reads)
	_, err := remote.Dial(a, remote.WithGovernance(codemode.Governance{Approver: func(context.Context, codemode.ToolCall) (codemode.Decision, error) {
		return codemode.Approve(), nil
	}}))
	assert.True(t, err != nil && strings.Contains(err.Error(), "Approver"), "an Approver cannot decide a daemon's calls")
}
