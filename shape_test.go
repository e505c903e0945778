//go:build cgo

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

// TestShapeLargeArray: a 5 MB array shaped to 16 KiB is valid JSON under
// the budget, keeps its first items in order and counts the rest.
func TestShapeLargeArray(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteByte('[')
	n := 0
	for b.Len() < 5<<20 {
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user %d","tags":["a","b"]}`, n, n)
		n++
	}
	b.WriteByte(']')
	value := json.RawMessage(b.String())
	out, info := ShapeJSON(value, 16<<10)
	require.NotNil(t, info)
	assert.LessOrEqual(t, len(out), 16<<10)
	var got []any
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	kept := len(got) - 1
	assert.Greater(t, kept, 200, "most of the budget holds items")
	for i := range kept {
		assert.Equal(t, map[string]any{"id": float64(i), "name": fmt.Sprintf("user %d", i), "tags": []any{"a", "b"}}, got[i])
	}
	assert.Equal(t, fmt.Sprintf("… %d more items (%d in all)", n-kept, n), got[kept])
	assert.Equal(t, &Shaping{Budget: 16 << 10, Size: len(value), Arrays: 1, Items: n - kept}, info)
	again, _ := ShapeJSON(value, 16<<10)
	assert.Equal(t, out, again, "deterministic")
	assert.Contains(t, info.Note("result"), fmt.Sprintf("%d array items left out (1 array)", n-kept))
}

func TestShapeJSON(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 400)
	tests := []struct {
		name, in string
		budget   int
		want     string
	}{
		{"fits", `{"a":[1,2,3]}`, 64, `{"a":[1,2,3]}`},
		{"string", `"` + long + `"`, 100, `"` + strings.Repeat("é", 35) + `… [400 characters in all]"`},
		{"escapes kept whole", `"` + strings.Repeat(`\n`, 100) + `"`, 64, `"` + strings.Repeat(`\n`, 17) + `… [100 characters in all]"`},
		{"numbers", `[` + strings.Repeat("12345,", 40) + `1]`, 64, `[12345,12345,12345,12345,12345,"… 36 more items (41 in all)"]`},
		{"object", `{"a":1,"b":"` + strings.Repeat("x", 200) + `","c":3}`, 128,
			`{"a":1,"b":"` + strings.Repeat("x", 80) + `… [200 characters in all]","c":3}`},
		{"deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), 150,
			strings.Repeat("[", 31) + `"… 1 more item (1 in all)"` + strings.Repeat("]", 31)},
		{"too deep", strings.Repeat("[", 100) + `"` + strings.Repeat("x", 2000) + `"` + strings.Repeat("]", 100), 1000,
			strings.Repeat("[", 64) + `"[… 1 item, 2074 bytes]"` + strings.Repeat("]", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := ShapeJSON(json.RawMessage(tt.in), tt.budget)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
			assert.LessOrEqual(t, len(got), max(tt.budget, 64))
		})
	}
}

// TestShapeLogs: 10,000 lines keep their first and last lines under the
// budget, with the count between.
func TestShapeLogs(t *testing.T) {
	t.Parallel()
	logs := make([]string, 10000)
	for i := range logs {
		logs[i] = fmt.Sprintf("line %d", i)
	}
	out, info := ShapeLogs(logs, 4096)
	require.NotNil(t, info)
	b, _ := json.Marshal(out)
	assert.LessOrEqual(t, len(b), 4096)
	assert.Equal(t, "line 0", out[0])
	assert.Equal(t, "line 9999", out[len(out)-1])
	var mid int
	for i, l := range out {
		if strings.HasPrefix(l, "… ") {
			mid = i
		}
	}
	for i := range mid {
		assert.Equal(t, fmt.Sprintf("line %d", i), out[i])
	}
	tail := len(out) - mid - 1
	for k := range tail {
		assert.Equal(t, fmt.Sprintf("line %d", 10000-tail+k), out[mid+1+k])
	}
	assert.Equal(t, fmt.Sprintf("… %d lines left out (10000 in all) …", 10000-mid-tail), out[mid])
	assert.Equal(t, 10000-mid-tail, info.Lines)

	same, none := ShapeLogs([]string{"a", "b"}, 4096)
	assert.Nil(t, none)
	assert.Equal(t, []string{"a", "b"}, same)
	one, info := ShapeLogs([]string{strings.Repeat("x", 100000)}, 1024)
	assert.Len(t, one, 1)
	assert.Equal(t, 1, info.Strings)
	assert.True(t, strings.HasSuffix(one[0], "… [100000 characters in all]"))
}

func FuzzShapeJSON(f *testing.F) {
	f.Add(`[1,2,{"a":"bcdefghijklmnopqrstuvwxyz","b":[[[[1]]]]},"\u00e9\n"]`, 64)
	f.Add(`{"k":{"k":{"k":"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"}}}`, 70)
	f.Fuzz(func(t *testing.T, in string, budget int) {
		if !json.Valid([]byte(in)) || budget > 1<<20 {
			return
		}
		out, info := ShapeJSON(json.RawMessage(in), budget)
		if !json.Valid(out) {
			t.Fatalf("ShapeJSON(%q, %d) = %q: not JSON", in, budget, out)
		}
		if info == nil && string(out) != in {
			t.Fatalf("unshaped output differs")
		}
		if len(out) > max(budget, 64) {
			t.Fatalf("ShapeJSON(%q, %d) = %d bytes: over the budget", in, budget, len(out))
		}
	})
}

// TestCodeModeToolShapes: a 5 MB result and 10,000 log lines reach the
// model shaped to the tool's budget, saying so; a result that fits is
// exact; a budget of 0 turns shaping off.
func TestCodeModeToolShapes(t *testing.T) {
	t.Parallel()
	limits := Limits{Payload: 8 << 20, Logs: 1 << 20, Memory: 256 << 20, Deadline: 10 * time.Second}
	tool, err := NewCodeModeTool(nil, limits, WithOutputBudget(16<<10))
	require.NoError(t, err)
	t.Cleanup(func() { tool.Close() })
	invoke := func(tool *CodeModeTool, code string) (CallResult, map[string]any) {
		args, _ := json.Marshal(map[string]string{"code": code})
		r, err := tool.Invoke(context.Background(), args)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.Unmarshal(r.Output, &out), "%.300s", r.Output)
		return r, out
	}
	r, out := invoke(tool, `return Array.from({length: 200000}, (_, i) => ({id: i, name: "user " + i}))`)
	assert.LessOrEqual(t, len(r.Output), 16<<10+1024, "under the budget (the note apart)")
	items := out["result"].([]any)
	assert.Equal(t, map[string]any{"id": 0.0, "name": "user 0"}, items[0])
	assert.Equal(t, fmt.Sprintf("… %d more items (200000 in all)", 200000-len(items)+1), items[len(items)-1])
	assert.Contains(t, out["shaped"], "the result was ")
	assert.Contains(t, out["shaped"], "To see what was cut, return less")
	assert.Equal(t, r.Shaped, out["shaped"])

	r, out = invoke(tool, `for (let i = 0; i < 10000; i++) console.log("line " + i); return 1`)
	assert.Equal(t, 1.0, out["result"])
	logs := out["logs"].([]any)
	assert.Equal(t, "line 0", logs[0])
	assert.Equal(t, "line 9999", logs[len(logs)-1])
	assert.Contains(t, out["shaped"], "the log was ")
	assert.LessOrEqual(t, len(r.Output), 16<<10+1024)

	_, out = invoke(tool, `return [1, 2, 3]`)
	assert.Equal(t, map[string]any{"result": []any{1.0, 2.0, 3.0}}, out)

	// A thrown error's long message is cut as a string is.
	r, out = invoke(tool, `throw new Error("x".repeat(100000))`)
	assert.True(t, r.IsError)
	assert.Equal(t, "js", out["kind"])
	assert.Less(t, len(out["message"].(string)), 16<<10)
	assert.Contains(t, out["shaped"], "the error was ")

	exact, err := NewCodeModeTool(nil, limits, WithOutputBudget(0))
	require.NoError(t, err)
	t.Cleanup(func() { exact.Close() })
	r, _ = invoke(exact, `return "y".repeat(100000)`)
	assert.Empty(t, r.Shaped)
	assert.Greater(t, len(r.Output), 100000)

	_, err = NewCodeModeTool(nil, limits, WithOutputBudget(-1))
	assert.ErrorIs(t, err, ErrInvalidLimits)
}

func ExampleShapeJSON() {
	value := json.RawMessage(`{"users":[{"id":1,"name":"ada"},{"id":2,"name":"bob"},{"id":3,"name":"cy"},{"id":4,"name":"di"}],"note":"` +
		strings.Repeat("x", 200) + `"}`)
	out, info := ShapeJSON(value, 160)
	fmt.Println(string(out))
	fmt.Println(info.Items, info.Strings)
	// Output:
	// {"users":[{"id":1,"name":"ada"},"… 3 more items (4 in all)"],"note":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… [200 characters in all]"}
	// 3 1
}
