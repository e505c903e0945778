package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type getUserIn struct {
	ID     int    `json:"id" jsonschema:"the user's id"`
	Fields string `json:"fields,omitempty" jsonschema:"which fields, comma-separated"`
}

type user struct {
	ID    int      `json:"id"`
	Name  string   `json:"name"`
	Tags  []string `json:"tags,omitempty"`
	Photo []byte   `json:"photo,omitempty"`
}

func getUser(_ context.Context, in getUserIn) (user, error) {
	if in.ID == 0 {
		return user{}, fmt.Errorf("no user 0")
	}
	return user{ID: in.ID, Name: "ada", Photo: []byte{1, 2}}, nil
}

// TestFunc: a typed Go function as a capability: schemas inferred, the
// argument checked and decoded, the result encoded (bytes as a typed
// array).
func TestFunc(t *testing.T) {
	t.Parallel()
	c := Func("get_user", "Get a user.", getUser)
	assert.JSONEq(t, `{"type":"object","properties":{"id":{"type":"integer","description":"the user's id"},`+
		`"fields":{"type":"string","description":"which fields, comma-separated"}},"required":["id"],"additionalProperties":false}`, string(c.Params))
	assert.Contains(t, string(c.Returns), `"name":{"type":"string"}`)
	asyncC := Func("get_user_async", "Get a user.", getUser)
	asyncC.Async = true
	e := newExecutor(t, WithCapability(c), WithCapability(asyncC))
	ctx := context.Background()
	tests := []struct{ code, want string }{
		{"const u = get_user({id: 7}); return [u.id, u.name, u.photo instanceof Uint8Array]", `[7,"ada",true]`},
		{"const u = await get_user_async({id: 8}); return u.id", `8`},
		{"try { get_user({}) } catch (e) { return [e.name, e.message] }", "[\"TypeError\",\"get_user: `id` is required\"]"},
		{"try { get_user({id: 'x'}) } catch (e) { return e.message }", "\"get_user: `id`: got string, want integer\""},
		{"try { get_user({id: 1, extra: 1}) } catch (e) { return e.message }", "\"get_user: the arguments: additional properties 'extra' not allowed\""},
		{"try { get_user({id: 1e300}) } catch (e) { return [e.name, e.message.startsWith('get_user: `id`: got number, want integer')] }", `["TypeError",true]`},
		{"try { get_user({id: 0}) } catch (e) { return [e.name, e.message] }", `["Error","no user 0"]`},
	}
	for _, tt := range tests {
		res, err := e.Run(ctx, tt.code)
		require.NoError(t, err, tt.code)
		assert.Equal(t, tt.want, string(res.Value), tt.code)
	}
}

// TestFuncTool: the same as a Tool inside CodeModeTool.
func TestFuncTool(t *testing.T) {
	t.Parallel()
	cm, err := NewCodeModeTool([]Tool{FuncTool("get-user", "Get a user.", getUser)}, Limits{Deadline: 20 * time.Second}) // generous: the race detector on a loaded machine
	require.NoError(t, err)
	defer cm.Close()
	assert.Contains(t, cm.Description(), "type GetUserInput = {\n  /** the user's id */\n  id: number;\n  /** which fields, comma-separated */\n  fields?: string;\n};")
	assert.Contains(t, cm.Description(), "declare function get_user(args: GetUserInput): Promise<GetUserOutput>;")
	r, err := cm.Invoke(context.Background(), json.RawMessage(`{"code":"const u = await get_user({id: 3}); return [u.name, [...u.photo]]"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"result":["ada",[1,2]]}`, string(r.Output))
	r, err = cm.Invoke(context.Background(), json.RawMessage(`{"code":"try { await get_user({id: 'x'}) } catch (e) { return e.message }"}`))
	require.NoError(t, err)
	assert.Equal(t, "{\"result\":\"get_user: `id`: got string, want integer\"}", string(r.Output))
	out, err := FuncTool("t", "", getUser).Call(context.Background(), json.RawMessage(`{"id":"x"}`))
	assert.Nil(t, out)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "`id`: got string, want integer"), err.Error())
}
