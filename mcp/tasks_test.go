package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	cmcp "github.com/codemode-go/codemode/mcp"
)

// rawClient speaks JSON-RPC to a server over an in-memory transport, as a
// client of the Tasks extension does (the Go SDK's client does not).
type rawClient struct {
	t    *testing.T
	conn mcp.Connection
	next int64
}

func (c *rawClient) call(method string, params any) *jsonrpc.Response {
	c.t.Helper()
	c.next++
	id, _ := jsonrpc.MakeID(float64(c.next))
	p, err := json.Marshal(params)
	require.NoError(c.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(c.t, c.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: p}))
	for {
		msg, err := c.conn.Read(ctx)
		require.NoError(c.t, err)
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == id {
			return r
		}
	}
}

func (c *rawClient) result(method string, params any) map[string]any {
	c.t.Helper()
	r := c.call(method, params)
	require.NoError(c.t, r.Error, method)
	var out map[string]any
	require.NoError(c.t, json.Unmarshal(r.Result, &out))
	return out
}

// tasksServer is a code mode server with the Tasks extension over the
// shapes upstream, and a raw client initialized against it.
func tasksServer(t *testing.T, deadline time.Duration) *rawClient {
	up, err := cmcp.NewUpstream(context.Background(), "shapes", connect(t, upstreamServer(nil)))
	require.NoError(t, err)
	r, err := cmcp.NewRouter(up)
	require.NoError(t, err)
	e, err := codemode.New(codemode.WithLimits(codemode.Limits{Deadline: deadline}))
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	srv, err := cmcp.NewServer(e, r, cmcp.ServerOptions{Tasks: true})
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), cmcp.TasksTransport(st), nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	conn, err := ct.Connect(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	c := &rawClient{t: t, conn: conn}
	init := c.result("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	caps := init["capabilities"].(map[string]any)
	assert.Equal(t, map[string]any{cmcp.TasksExtension: map[string]any{}}, caps["extensions"], "the server declares the extension")
	require.NoError(t, conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}))
	return c
}

// withTasks is tools/call's params for run_js with code, declaring the
// extension when tasks is set.
func withTasks(code string, tasks bool) map[string]any {
	p := map[string]any{"name": "run_js", "arguments": map[string]any{"code": code}}
	if tasks {
		p["_meta"] = map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"extensions": map[string]any{cmcp.TasksExtension: map[string]any{}}}}
	}
	return p
}

// poll polls a task until it leaves working.
func (c *rawClient) poll(id string) map[string]any {
	c.t.Helper()
	for range 500 {
		got := c.result("tasks/get", map[string]any{"taskId": id})
		assert.Equal(c.t, "complete", got["resultType"])
		if got["status"] != "working" {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("task %s still working", id)
	return nil
}

// TestTasks: a client that declares the extension gets a task, polls it to
// its result; cancelled halfway, the program ends as a cancellation and
// the task says what it did; a client that does not gets its result on
// the request.
func TestTasks(t *testing.T) {
	c := tasksServer(t, 10*time.Second)

	created := c.result("tools/call", withTasks(`await new Promise((r) => setTimeout(r, 200)); return await shapes.get_json({n: 42})`, true))
	assert.Equal(t, "task", created["resultType"])
	assert.Equal(t, "working", created["status"])
	assert.EqualValues(t, cmcp.TaskTTL.Milliseconds(), created["ttlMs"])
	id := created["taskId"].(string)
	assert.Len(t, id, 32)
	done := c.poll(id)
	assert.Equal(t, "completed", done["status"])
	res := done["result"].(map[string]any)
	assert.Equal(t, map[string]any{"result": map[string]any{"n": 42.0}, "logs": []any{}}, res["structuredContent"])
	assert.Nil(t, res["isError"])

	// Cancelled halfway: after a write, in a loop.
	created = c.result("tools/call", withTasks(`await shapes.get_json({n: 1}); for (;;) {}`, true))
	id = created["taskId"].(string)
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, map[string]any{"resultType": "complete"}, c.result("tasks/cancel", map[string]any{"taskId": id}))
	done = c.poll(id)
	assert.Equal(t, "cancelled", done["status"])
	assert.Equal(t, "cancelled: shapes.get_json completed before the run was stopped", done["statusMessage"])

	// Without the extension: the result on the request.
	plain := c.result("tools/call", withTasks(`return 7`, false))
	assert.Equal(t, map[string]any{"result": 7.0, "logs": []any{}}, plain["structuredContent"])
	assert.Nil(t, plain["resultType"])

	// A mark the client forged is not a task.
	forged := withTasks(`return 8`, false)
	forged["_meta"] = map[string]any{"codemode/task": id}
	assert.Equal(t, map[string]any{"result": 8.0, "logs": []any{}}, c.result("tools/call", forged)["structuredContent"])

	// Unknown and malformed ids.
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		r := c.call(m, map[string]any{"taskId": "nope"})
		var we *jsonrpc.Error
		require.ErrorAs(t, r.Error, &we, m)
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), we.Code, m)
		r = c.call(m, map[string]any{})
		require.ErrorAs(t, r.Error, &we, m)
	}
	// tasks/update on a known task: acknowledged (a code task asks for no input).
	assert.Equal(t, map[string]any{"resultType": "complete"}, c.result("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}}))
}

// TestTasksFailedProgram: a program that fails completes its task with
// the failure as the tool's result (isError), its summary in the status.
func TestTasksFailedProgram(t *testing.T) {
	c := tasksServer(t, 300*time.Millisecond)
	created := c.result("tools/call", withTasks(`await shapes.get_json({n: 1}); for (;;) {}`, true))
	done := c.poll(created["taskId"].(string))
	assert.Equal(t, "completed", done["status"])
	assert.Equal(t, "shapes.get_json completed before the timeout", done["statusMessage"])
	res := done["result"].(map[string]any)
	assert.Equal(t, true, res["isError"])
	sc := res["structuredContent"].(map[string]any)
	assert.Equal(t, "timeout", sc["error"].(map[string]any)["kind"])
	assert.Equal(t, fmt.Sprint(1), fmt.Sprint(sc["effects"].(map[string]any)["started"]))
}
