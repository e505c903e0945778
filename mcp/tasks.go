package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-go/codemode"
)

// tasks.go: the MCP Tasks extension (io.modelcontextprotocol/tasks,
// 2026-07-28) for the code tool. A client that declares the extension on
// a tools/call gets a task at once (resultType "task") and polls
// tasks/get for the program's result, or ends it with tasks/cancel; a
// client that does not gets the result on the request, kept alive by
// progress notifications. The SDK routes only the methods it knows, so
// the extension lives in a transport (TasksTransport) that answers the
// tasks/* requests itself and marks a tools/call that may become a task;
// the code tool's handler claims the mark and runs the program in the
// background.

// TasksExtension is the MCP Tasks extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// The task parameters a CreateTaskResult and tasks/get give the client.
const (
	// TaskTTL is how long a task's result is kept, from its creation.
	TaskTTL = time.Hour
	// TaskPollInterval is the polling interval suggested to the client.
	TaskPollInterval = 200 * time.Millisecond
	// MaxTasks bounds the tasks a process keeps: past it, finished ones
	// are dropped oldest first, and while every one is still working a
	// new call runs on its request instead of as a task.
	MaxTasks = 1024
	// MaxTaskBytes bounds the results the finished tasks keep, in all:
	// past it, the oldest finished tasks are dropped (a client polling one
	// then gets "unknown task").
	MaxTaskBytes = 64 << 20
)

const (
	clientCapsMeta  = "io.modelcontextprotocol/clientCapabilities"
	taskMarkMeta    = "codemode/task"         // the transport's mark on a tools/call it offers as a task
	taskCreatedMeta = "codemode/task-created" // the handler's answer: it runs as that task
)

// task is one program run as a task.
type task struct {
	id               string
	created, updated time.Time
	status           string // working, completed, cancelled, failed
	message          string
	result           json.RawMessage // completed: the CallToolResult
	claimed          bool            // a handler runs it
	cancel           context.CancelFunc
	cancelled        bool
}

// taskTable holds a process's tasks (their ids are unguessable: 128 random
// bits).
type taskTable struct {
	mu    sync.Mutex
	m     map[string]*task
	bytes int // the results the finished tasks keep
}

var tasks = &taskTable{m: map[string]*task{}}

// create makes a task, or returns nil when the table is full of working
// ones.
func (t *taskTable) create(now time.Time) *task {
	var b [16]byte
	rand.Read(b[:])
	tk := &task{id: hex.EncodeToString(b[:]), created: now, updated: now, status: "working"}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now)
	if len(t.m) >= MaxTasks {
		var oldest *task
		for _, x := range t.m {
			if x.status != "working" && (oldest == nil || x.created.Before(oldest.created)) {
				oldest = x
			}
		}
		if oldest == nil {
			return nil
		}
		t.remove(oldest)
	}
	t.m[tk.id] = tk
	return tk
}

// remove drops a task (t.mu held).
func (t *taskTable) remove(tk *task) {
	delete(t.m, tk.id)
	t.bytes -= len(tk.result)
}

// shed drops the oldest finished tasks while their results are past
// MaxTaskBytes (t.mu held).
func (t *taskTable) shed() {
	for t.bytes > MaxTaskBytes {
		var oldest *task
		for _, x := range t.m {
			if x.status != "working" && len(x.result) > 0 && (oldest == nil || x.updated.Before(oldest.updated)) {
				oldest = x
			}
		}
		if oldest == nil {
			return
		}
		t.remove(oldest)
	}
}

// expire drops the finished tasks past their TTL (t.mu held).
func (t *taskTable) expire(now time.Time) {
	for _, x := range t.m {
		if x.status != "working" && now.Sub(x.created) > TaskTTL {
			t.remove(x)
		}
	}
}

// claim gives the handler the task the transport offered under id, once,
// with the context its program runs under (ctx's values, not its end:
// the request returns at once).
func (t *taskTable) claim(ctx context.Context, id string) (*task, context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tk := t.m[id]
	if tk == nil || tk.claimed {
		return nil, nil
	}
	tk.claimed = true
	ctx, tk.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return tk, ctx
}

// drop removes a task the handler did not claim (a tool that answers at
// once).
func (t *taskTable) drop(id string) {
	t.mu.Lock()
	if tk := t.m[id]; tk != nil && !tk.claimed {
		t.remove(tk)
	}
	t.mu.Unlock()
}

// finish records a task's outcome: completed with res, or cancelled (a
// cancel asked for and the program ended by it), saying what it did.
func (t *taskTable) finish(tk *task, res *mcp.CallToolResult, now time.Time) {
	b, err := json.Marshal(res) // the SDK writes no resultType of its own here
	if err == nil && len(b) > 2 {
		// A task's result is the call's CallToolResult, complete.
		b = append([]byte(`{"resultType":"complete",`), b[1:]...)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.shed()
	tk.updated = now
	tk.cancel()
	switch {
	case err != nil:
		tk.status, tk.message = "failed", "the result does not encode: "+err.Error()
	case tk.cancelled && res.IsError:
		tk.status, tk.message = "cancelled", "cancelled: "+effectsOf(res).Summary()
	default:
		tk.status, tk.result = "completed", b
		t.bytes += len(b)
		if e := effectsOf(res); res.IsError {
			tk.message = e.Summary()
		}
	}
}

// effectsOf is a failed result's effects ledger.
func effectsOf(res *mcp.CallToolResult) *codemode.Effects {
	if f, ok := res.StructuredContent.(failOutput); ok {
		return f.Effects
	}
	return nil
}

// get returns a task's state as the client reads it, and whether it
// exists.
func (t *taskTable) get(id string) (taskJSON, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tk := t.m[id]
	if tk == nil {
		return taskJSON{}, false
	}
	j := taskJSON{TaskID: tk.id, Status: tk.status, StatusMessage: tk.message, CreatedAt: stamp(tk.created),
		LastUpdatedAt: stamp(tk.updated), TTLMs: TaskTTL.Milliseconds(), PollIntervalMs: TaskPollInterval.Milliseconds()}
	switch tk.status {
	case "completed":
		j.Result = tk.result
	case "failed":
		j.Error, _ = json.Marshal(jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: tk.message})
	}
	return j, true
}

// cancelTask asks a working task's program to stop, reporting whether the
// task exists. The program ends as a cancellation (its effects ledger
// says what it did); a task that finished first keeps its outcome.
func (t *taskTable) cancelTask(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	tk := t.m[id]
	if tk == nil {
		return false
	}
	if tk.status == "working" && tk.cancel != nil {
		tk.cancelled = true
		tk.cancel()
	}
	return true
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// taskJSON is a Task (a DetailedTask in tasks/get; a CreateTaskResult
// with ResultType "task").
type taskJSON struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
}

// TasksTransport serves the MCP Tasks extension over t: a server made
// with ServerOptions.Tasks and run on it answers a tools/call of its code
// tool that declares the extension with a task (CreateTaskResult), and
// tasks/get, tasks/cancel and tasks/update for it; other calls and
// clients are served as before. Use it for transports the server owns
// whole (stdio, in-memory); `codemode mcp` does for stdio.
func TasksTransport(t mcp.Transport) mcp.Transport { return tasksTransport{t} }

type tasksTransport struct{ mcp.Transport }

func (t tasksTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskConn{Connection: c, offered: map[jsonrpc.ID]string{}}, nil
}

// taskConn is a connection that serves the tasks/* methods and offers
// tools/call requests as tasks.
type taskConn struct {
	mcp.Connection
	mu      sync.Mutex
	offered map[jsonrpc.ID]string // tools/call requests offered as tasks: their task
}

// Read passes messages to the server, answering tasks/* requests itself.
func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return msg, nil
		}
		switch req.Method {
		case "tasks/get", "tasks/cancel", "tasks/update":
			if err := c.Connection.Write(ctx, answerTask(req)); err != nil {
				return nil, err
			}
			continue
		case "tools/call":
			c.offer(req)
		}
		return msg, nil
	}
}

// offer marks a tools/call whose client declares the extension with a new
// task, for the code tool's handler to claim; it takes a mark the client
// sent off every call.
func (c *taskConn) offer(req *jsonrpc.Request) {
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil || params == nil {
		return
	}
	var meta map[string]json.RawMessage
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return
	}
	_, forged := meta[taskMarkMeta]
	delete(meta, taskMarkMeta)
	var tk *task
	if declaresTasks(meta) {
		tk = tasks.create(time.Now())
	}
	if tk == nil && !forged {
		return
	}
	if tk != nil {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[taskMarkMeta], _ = json.Marshal(tk.id)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return
	}
	params["_meta"] = b
	if req.Params, err = json.Marshal(params); err != nil {
		return
	}
	if tk != nil {
		c.mu.Lock()
		c.offered[req.ID] = tk.id
		c.mu.Unlock()
	}
}

// declaresTasks reports whether a request's _meta declares the extension
// among its client capabilities.
func declaresTasks(meta map[string]json.RawMessage) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(meta[clientCapsMeta], &caps) != nil {
		return false
	}
	ext, ok := caps.Extensions[TasksExtension]
	return ok && len(ext) > 0 && ext[0] == '{'
}

// Write sends the server's messages, turning the answer to a call its
// handler took as a task into the CreateTaskResult.
func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		id, offered := c.offered[resp.ID]
		delete(c.offered, resp.ID)
		c.mu.Unlock()
		if offered {
			var r struct {
				Meta map[string]any `json:"_meta"`
			}
			if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil && r.Meta[taskCreatedMeta] == id {
				j, _ := tasks.get(id)
				j.ResultType = "task"
				b, err := json.Marshal(j)
				if err != nil {
					return err
				}
				msg = &jsonrpc.Response{ID: resp.ID, Result: b}
			} else {
				tasks.drop(id)
			}
		}
	}
	return c.Connection.Write(ctx, msg)
}

// answerTask answers a tasks/* request.
func answerTask(req *jsonrpc.Request) *jsonrpc.Response {
	var p struct {
		TaskID *string `json:"taskId"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.TaskID == nil {
		return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: req.Method + ": params need a taskId"}}
	}
	unknown := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task: " + clipID(*p.TaskID)}}
	ack := &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"resultType":"complete"}`)}
	switch req.Method {
	case "tasks/get":
		j, ok := tasks.get(*p.TaskID)
		if !ok {
			return unknown
		}
		j.ResultType = "complete"
		b, err := json.Marshal(j)
		if err != nil {
			return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
		}
		return &jsonrpc.Response{ID: req.ID, Result: b}
	case "tasks/cancel":
		if !tasks.cancelTask(*p.TaskID) {
			return unknown
		}
		return ack
	default: // tasks/update: a code task asks for no input; responses are ignored
		if _, ok := tasks.get(*p.TaskID); !ok {
			return unknown
		}
		return ack
	}
}

// clipID is a client's task id as an error message quotes it.
func clipID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// taskKey marks the context of a program run as a task.
type taskKey struct{}

// serveTask serves a program run as a task: as serve does, but a pause is
// never asked of the user through the client (nobody waits on the
// request): its result says it paused.
func (h *handler) serveTask(ctx context.Context, req *mcp.CallToolRequest,
	exec func(context.Context, []codemode.Provider, codemode.DispatchFunc) codemode.ExecuteResult) (*mcp.CallToolResult, error) {
	return h.serve(context.WithValue(ctx, taskKey{}, true), req, exec)
}
