package codemode

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGrant: a run reaches only what its context grants; others are
// absent, and a run without a grant reaches everything.
func TestGrant(t *testing.T) {
	t.Parallel()
	ok := fn(func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	e := newExecutor(t, WithCapability(Capability{Name: "read", Func: ok}), WithCapability(Capability{Name: "write", Func: ok}),
		WithCapability(Capability{Name: "admin", Async: true, Func: ok}))
	probe := "return [typeof read, typeof write, typeof admin]"
	ctx := context.Background()
	for _, tt := range []struct {
		ctx  context.Context
		want string
	}{
		{ctx, `["function","function","function"]`},
		{Grant(ctx, "read"), `["function","undefined","undefined"]`},
		{Grant(ctx, "write", "read", "read"), `["function","function","undefined"]`},
		{Grant(ctx), `["undefined","undefined","undefined"]`},
		{Grant(ctx, "nope", "admin"), `["undefined","undefined","function"]`},
		{Grant(ctx, "read"), `["function","undefined","undefined"]`}, // the same set again: its sandbox is reused
		{ctx, `["function","function","function"]`},
	} {
		res, err := e.Run(tt.ctx, probe)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(res.Value))
	}
	res, err := e.Run(Grant(ctx, "read"), "return read()")
	require.NoError(t, err)
	assert.Equal(t, `"ok"`, string(res.Value))
	_, err = e.Run(Grant(ctx, "read"), "return write()")
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, ee.Message, "ReferenceError: write is not defined")
	x := e.Execute(Grant(ctx, "admin"), Request{Code: "async () => [typeof read, await admin()]"})
	assert.Equal(t, `["undefined","ok"]`, result(t, x))
}

// TestCodeModeToolGranted: a granted view describes and reaches only its
// tools.
func TestCodeModeToolGranted(t *testing.T) {
	t.Parallel()
	tool := func(name string) Tool {
		return hostTool{def: ToolDefinition{Name: name, Description: "The " + name + " tool."},
			call: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`"` + name + `"`), nil
			}}
	}
	cm, err := NewCodeModeTool([]Tool{tool("search"), tool("delete")}, Limits{Deadline: 20 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	g := cm.Granted("search")
	assert.Contains(t, g.Description(), "declare function search(")
	assert.NotContains(t, g.Description(), "delete")
	assert.Contains(t, cm.Description(), "declare function delete_tool(")
	r, err := g.Invoke(context.Background(), json.RawMessage(`{"code":"return [await search(), typeof delete_tool]"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"result":["search","undefined"]}`, string(r.Output))
	r, err = cm.Invoke(context.Background(), json.RawMessage(`{"code":"return typeof delete_tool"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"result":"function"}`, string(r.Output))
}
