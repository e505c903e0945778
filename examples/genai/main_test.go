package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode/internal/fakeapi"
)

func reply(call string) string {
	return `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":` + call + `}]},"finishReason":"STOP"}]}`
}

// TestAgentLoop runs the example against a fake Gemini API: the program,
// its result in a functionResponse on the wire, the stop declaration
// ending the loop; and an unknown city, the tool's "error", caught by the
// program.
func TestAgentLoop(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"code": `const rows = await Promise.all(["Paris", "Tokyo"].map(async (city) => {
  const [w, p] = await Promise.all([get_weather({city}), population({city})]);
  return {city, celsius: w.celsius, population: p.population};
}));
try {
  await get_weather({city: "Atlantis"});
} catch (e) {
  rows.push(e.message);
}
return rows;`})
	f := fakeapi.New(
		reply(`{"id":"f1","name":"run_js","args":`+string(args)+`}`),
		reply(`{"id":"f2","name":"final_answer","args":{"answer":"Tokyo is warmer and bigger."}}`),
	)
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("GOOGLE_GEMINI_BASE_URL", srv.URL)
	t.Setenv("GEMINI_API_KEY", "test")
	t.Setenv("GOOGLE_API_KEY", "")
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out))
	assert.Equal(t, "Tokyo is warmer and bigger.\n", out.String())
	bodies := f.Bodies()
	require.Len(t, bodies, 2)
	contents := bodies[1]["contents"].([]any)
	part := contents[len(contents)-1].(map[string]any)["parts"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"id": "f1", "name": "run_js", "response": map[string]any{"output": map[string]any{"result": []any{
		map[string]any{"city": "Paris", "celsius": float64(18), "population": float64(2100000)},
		map[string]any{"city": "Tokyo", "celsius": float64(24), "population": float64(14000000)},
		"tool `get_weather` failed: unknown city \"Atlantis\"",
	}}}}, part["functionResponse"])
}

// TestLive runs the example against the real API when a key is set.
func TestLive(t *testing.T) {
	if os.Getenv("GEMINI_API_KEY") == "" || os.Getenv("CODEMODE_LIVE") == "" {
		t.Skip("set CODEMODE_LIVE=1 and GEMINI_API_KEY to run against the real API")
	}
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out))
	t.Log(out.String())
	assert.NotEmpty(t, strings.TrimSpace(out.String()))
}
