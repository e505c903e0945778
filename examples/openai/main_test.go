package main

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode/internal/fakeapi"
)

// program is what a model writes for the task: both cities, both tools,
// at once.
const program = `const cities = ["Paris", "Tokyo"];
const rows = await Promise.all(cities.map(async (city) => {
  const [w, p] = await Promise.all([get_weather({city}), population({city})]);
  return {city, celsius: w.celsius, population: p};
}));
return rows;`

// TestAgentLoop runs the example against a fake Chat Completions API: the
// model's program, the answer on the wire, the stop tool ending the loop.
func TestAgentLoop(t *testing.T) {
	args := map[string]string{"code": program}
	f := fakeapi.New(
		fakeapi.ChatToolCalls("["+fakeapi.ChatToolCall("call_1", "run_js", args)+"]"),
		fakeapi.ChatToolCalls("["+fakeapi.ChatToolCall("call_2", "final_answer", map[string]string{"answer": "Tokyo is warmer and bigger."})+"]"),
	)
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	t.Setenv("OPENAI_API_KEY", "test")
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out))
	assert.Equal(t, "Tokyo is warmer and bigger.\n", out.String())
	bodies := f.Bodies()
	require.Len(t, bodies, 2)
	msgs := bodies[1]["messages"].([]any)
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_1",
		"content": `{"result":[{"city":"Paris","celsius":18,"population":2100000},{"city":"Tokyo","celsius":24,"population":14000000}]}`},
		msgs[len(msgs)-1])
}

// TestLive runs the example against the real API when a key is set.
func TestLive(t *testing.T) {
	if os.Getenv("OPENAI_API_KEY") == "" || os.Getenv("CODEMODE_LIVE") == "" {
		t.Skip("set CODEMODE_LIVE=1 and OPENAI_API_KEY to run against the real API")
	}
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out))
	t.Log(out.String())
	assert.NotEmpty(t, strings.TrimSpace(out.String()))
}
