package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
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

// flatAll has a field of every kind the flat decoder fills.
type flatAll struct {
	B   bool    `json:"b"`
	S   string  `json:"s,omitempty"`
	I   int     `json:"i"`
	I8  int8    `json:"i8"`
	I16 int16   `json:"i16"`
	I32 int32   `json:"i32"`
	I64 int64   `json:"i64"`
	U   uint    `json:"u"`
	U8  uint8   `json:"u8"`
	U16 uint16  `json:"u16"`
	U32 uint32  `json:"u32"`
	U64 uint64  `json:"u64"`
	F32 float32 `json:"f32"`
	F64 float64 `json:"f64,omitzero"`
	own int
}

// selfDecoding decodes itself; the flat decoder must leave it alone.
type selfDecoding struct {
	N int `json:"n"`
}

func (s *selfDecoding) UnmarshalJSON(b []byte) error {
	s.N = -1
	return nil
}

// flatAgrees checks that where the flat decoder decodes args, the general
// one decodes them without error to the same value, and that where it
// vouches for the check of flatAll's own schema, the check passes them.
func flatAgrees(t *testing.T, args []byte) (decoded bool) {
	plan := flatPlanFor(reflect.TypeFor[flatAll]())
	require.NotNil(t, plan)
	var sc schemaCache
	check, cerr := sc.compileCheck(schemaFor[flatAll]())
	require.Nil(t, cerr)
	need, vouches := plan.vouches(check)
	require.True(t, vouches, "a Func's own schema")
	var fast, slow flatAll
	seen, ok := plan.decode(args, unsafe.Pointer(&fast))
	if !ok {
		return false
	}
	require.NoError(t, jsonv2.Unmarshal(args, &slow), "%s", args)
	require.Equal(t, slow, fast, "%s", args)
	if seen&need == need {
		require.Empty(t, check.problem(args), "%s", args)
	}
	return true
}

// TestFlatVouches: a flat decode stands in for the check only where every
// value it takes passes the check; a schema that can refuse one (a
// narrower bound, an enum, a length, another type, a name the struct does
// not have) keeps the check.
func TestFlatVouches(t *testing.T) {
	t.Parallel()
	plan := flatPlanFor(reflect.TypeFor[flatAll]())
	var sc schemaCache
	for _, c := range []struct {
		params  string
		vouches bool
		need    []string
	}{
		{string(schemaFor[flatAll]()), true, []string{"b", "i", "i8", "i16", "i32", "i64", "u", "u8", "u16", "u32", "u64", "f32"}},
		{``, true, nil}, // no Params: nothing to check
		{`{"type":"object"}`, true, nil},
		{`{"type":"object","properties":{"i8":{"type":"integer","minimum":-1000,"maximum":1000},"s":{"type":"string"}},"required":["s"]}`, true, []string{"s"}},
		{`{"type":"object","properties":{"f64":{"type":"number"},"i":{"type":"number"},"u8":{}}}`, true, nil},
		{`{"type":"object","properties":{"i8":{"type":"integer","maximum":100}}}`, false, nil},
		{`{"type":"object","properties":{"u":{"type":"integer","minimum":1}}}`, false, nil},
		{`{"type":"object","properties":{"f64":{"type":"number","minimum":0}}}`, false, nil},
		{`{"type":"object","properties":{"f64":{"type":"integer"}}}`, false, nil},
		{`{"type":"object","properties":{"i":{"type":"string"}}}`, false, nil},
		{`{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`, false, nil},
		{`{"type":"object","properties":{"s":{"enum":["a"]}}}`, false, nil},
		{`{"type":"object","properties":{"nope":{}},"required":["nope"]}`, false, nil},
		{`{"type":"object","properties":{"i":{"type":"integer"}},"additionalProperties":false}`, false, nil}, // b is no property
		{`{"type":"object","properties":{"i":{"type":"integer","multipleOf":2}}}`, false, nil},               // no plan
	} {
		check, err := sc.compileCheck(json.RawMessage(c.params))
		require.Nil(t, err, c.params)
		need, vouches := plan.vouches(check)
		assert.Equal(t, c.vouches, vouches, c.params)
		if c.vouches {
			var want uint64
			for _, name := range c.need {
				want |= 1 << plan.field([]byte(name))
			}
			assert.Equal(t, want, need, c.params)
		}
	}
}

// TestFuncNarrowedParams: a Func whose Params were narrowed after it was
// made still refuses, in the check's words, what the narrower schema
// refuses and its type would hold; a missing field is still required.
func TestFuncNarrowedParams(t *testing.T) {
	t.Parallel()
	type arg struct {
		N int8 `json:"n"`
	}
	c := Func("bump", "", func(_ context.Context, a arg) (int, error) { return int(a.N) + 1, nil })
	c.Params = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":10}},"required":["n"]}`)
	wide := Func("wide", "", func(_ context.Context, a arg) (int, error) { return int(a.N) + 1, nil })
	ex, err := New(WithCapability(c), WithCapability(wide))
	require.NoError(t, err)
	defer ex.Close()
	res, err := ex.Run(context.Background(), `
		const out = [bump({n: 10}), wide({n: 100})];
		for (const f of [() => bump({n: 11}), () => bump({}), () => wide({n: 128}), () => wide({})]) {
			try { f(); out.push("no error") } catch (e) { out.push(e.constructor.name + ": " + e.message) }
		}
		return out`)
	require.NoError(t, err)
	assert.JSONEq(t, `[11, 101,
		"TypeError: bump: `+"`n`"+`: maximum: got 11, want 10",
		"TypeError: bump: `+"`n`"+` is required",
		"TypeError: wide: `+"`n`"+`: maximum: got 128, want 127",
		"TypeError: wide: `+"`n`"+` is required"]`, string(res.Value))
}

func TestFlatDecode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args string
		fast bool
	}{
		{`{}`, true},
		{`{"b":true,"s":"héllo","i":-42,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807}`, true},
		{`{"u":0,"u8":255,"u16":65535,"u32":4294967295,"u64":9999999999999999999,"f32":1.5,"f64":-2.5e-3}`, true},
		{`{"i":1.0}`, false},  // a fraction: the general decoder refuses it
		{`{"i8":128}`, false}, // out of range
		{`{"u":-1}`, false},   // negative
		{`{"u":-0}`, false},   // left to the general decoder
		{`{"i":9223372036854775808}`, false},
		{`{"s":"a\"b"}`, false},  // an escape
		{`{"s":null}`, false},    // null
		{`{"i":1,"i":2}`, false}, // a repeated key
		{`{"x":1}`, false},       // an unknown key
		{`{"I":1}`, false},       // names match exactly here
		{`{"s":"\xff"}`, false},  // invalid UTF-8
		{`{"f32":1e39}`, false},  // beyond float32
		{`{"b":1}`, false},       // a number for a bool
		{`{"s":{}}`, false},      // nested
		{`{"i":1,}`, false},
		{`{"i":1}x`, false},
		{` {"i":1}`, false},
	} {
		assert.Equal(t, c.fast, flatAgrees(t, []byte(c.args)), c.args)
	}
	assert.Nil(t, flatPlanFor(reflect.TypeFor[struct{ A int }]()), "untagged fields are left to the decoder")
	assert.Nil(t, flatPlanFor(reflect.TypeFor[struct {
		A int `json:"a,string"`
	}]()), "options beyond omitempty")
	assert.Nil(t, flatPlanFor(reflect.TypeFor[struct {
		T time.Duration `json:"t"`
	}]()), "a named type may decode itself")
	assert.Nil(t, flatPlanFor(reflect.TypeFor[struct {
		A []int `json:"a"`
	}]()), "not a scalar")
	assert.Nil(t, flatPlanFor(reflect.TypeFor[selfDecoding]()), "a type that decodes itself")
	for _, tag := range []string{`json:"a,"`, `json:"a,omitempty,omitempty"`, `json:"a,,omitempty"`, `json:"'a,b'"`, `json:"a b"`} {
		st := reflect.StructOf([]reflect.StructField{{Name: "A", Type: reflect.TypeFor[int](), Tag: reflect.StructTag(tag)}})
		assert.Nil(t, flatPlanFor(st), tag)
	}
	assert.Nil(t, flatPlanFor(reflect.TypeFor[struct{ n int }]()), "no exported field: the decoder refuses the type")
}

// FuzzFlatDecode: the flat decoder decodes nothing the general decoder
// would refuse or decode otherwise.
func FuzzFlatDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"i":1,"s":"x","b":false}`, `{"u8":256}`, `{"f64":1e308,"f32":3.4e38}`, `{"i64":-9223372036854775808}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) { flatAgrees(t, args) })
}
