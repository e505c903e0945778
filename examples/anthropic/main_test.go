package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode/internal/fakeapi"
)

func message(content string) string {
	return `{"id":"msg","type":"message","role":"assistant","model":"claude","stop_reason":"tool_use","content":` + content +
		`,"usage":{"input_tokens":1,"output_tokens":1}}`
}

// TestAgentLoop runs the example against a fake Messages API: a program
// with a mistake, its repair after the error JSON, the result on the wire,
// the stop tool ending the loop.
func TestAgentLoop(t *testing.T) {
	bad, _ := json.Marshal(map[string]string{"code": `return get_weather({town: "Paris"})`})
	good, _ := json.Marshal(map[string]string{"code": `const cities = ["Paris", "Tokyo"];
return Promise.all(cities.map(async (city) => {
  const [w, p] = await Promise.all([get_weather({city}), population({city})]);
  return {city, celsius: w.celsius, population: p};
}));`})
	f := fakeapi.New(
		message(`[{"type":"tool_use","id":"tu_1","name":"run_js","input":`+string(bad)+`}]`),
		message(`[{"type":"tool_use","id":"tu_2","name":"run_js","input":`+string(good)+`}]`),
		message(`[{"type":"tool_use","id":"tu_3","name":"final_answer","input":{"answer":"Tokyo is warmer and bigger."}}]`),
	)
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	t.Setenv("ANTHROPIC_API_KEY", "test")
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out))
	assert.Equal(t, "Tokyo is warmer and bigger.\n", out.String())
	bodies := f.Bodies()
	require.Len(t, bodies, 3)
	result := func(body map[string]any) map[string]any {
		msgs := body["messages"].([]any)
		return msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	}
	repair := result(bodies[1])
	assert.Equal(t, "tu_1", repair["tool_use_id"])
	assert.Equal(t, true, repair["is_error"])
	assert.Equal(t, `Error: {"kind":"js","name":"run_js","message":"TypeError: get_weather: `+"`city`"+` is required",`+
		`"effects":{"summary":"no tool ran","started":0,"completed":0,"calls":[{"seq":0,"tool":"get_weather","effect":"write","outcome":"invalid_args","ms":0}]}}`,
		msRE.ReplaceAllString(repair["content"].([]any)[0].(map[string]any)["text"].(string), `"ms":0`))
	answer := result(bodies[2])
	assert.Equal(t, "tu_2", answer["tool_use_id"])
	assert.Equal(t, `{"result":[{"city":"Paris","celsius":18,"population":2100000},{"city":"Tokyo","celsius":24,"population":14000000}]}`,
		answer["content"].([]any)[0].(map[string]any)["text"])
}

// msRE matches a ledger's elapsed times.
var msRE = regexp.MustCompile(`"ms":[0-9.e-]+`)

// TestLive runs the example against the real API when a key is set.
func TestLive(t *testing.T) {
	if os.Getenv("ANTHROPIC_API_KEY") == "" || os.Getenv("CODEMODE_LIVE") == "" {
		t.Skip("set CODEMODE_LIVE=1 and ANTHROPIC_API_KEY to run against the real API")
	}
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out))
	t.Log(out.String())
	assert.NotEmpty(t, strings.TrimSpace(out.String()))
}
