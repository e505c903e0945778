package genai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/codemode-go/codemode"
	cmgenai "github.com/codemode-go/codemode/adapters/genai"
	"github.com/codemode-go/codemode/internal/fakeapi"
)

func reply(parts string) string {
	return `{"candidates":[{"content":{"role":"model","parts":` + parts + `},"finishReason":"STOP"}]}`
}

// TestGenerateContent: a failing program answered with "error", its repair
// answered with "output", then the final text; as the SDK sent them.
func TestGenerateContent(t *testing.T) {
	f := fakeapi.New(
		reply(`[{"functionCall":{"id":"f1","name":"run_js","args":{"code":"return missing()"}}}]`),
		reply(`[{"functionCall":{"id":"f2","name":"run_js","args":{"code":"return {n: 3}"}}}]`),
		reply(`[{"text":"n is 3"}]`),
	)
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx := context.Background()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "test", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	require.NoError(t, err)
	cm, err := codemode.NewCodeModeTool(nil, codemode.Limits{Deadline: 10 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{cmgenai.Tool(cm)}}
	contents := []*genai.Content{genai.NewContentFromText("what is n?", genai.RoleUser)}
	var final string
	for range 5 {
		resp, err := c.Models.GenerateContent(ctx, "gemini-test", contents, cfg)
		require.NoError(t, err)
		if len(resp.FunctionCalls()) == 0 {
			final = resp.Text()
			break
		}
		parts, rest, err := cmgenai.Answers(ctx, cm, resp)
		require.NoError(t, err)
		require.Empty(t, rest)
		contents = append(contents, resp.Candidates[0].Content, &genai.Content{Role: genai.RoleUser, Parts: parts})
	}
	assert.Equal(t, "n is 3", final)
	require.Len(t, f.Bodies(), 3)
	decl := f.Bodies()[0]["tools"].([]any)[0].(map[string]any)["functionDeclarations"].([]any)[0].(map[string]any)
	assert.Equal(t, "run_js", decl["name"])
	assert.NotNil(t, decl["parametersJsonSchema"])
	lastPart := func(body map[string]any) map[string]any {
		cs := body["contents"].([]any)
		parts := cs[len(cs)-1].(map[string]any)["parts"].([]any)
		return parts[0].(map[string]any)["functionResponse"].(map[string]any)
	}
	bad := lastPart(f.Bodies()[1])
	assert.Equal(t, "f1", bad["id"])
	errv := bad["response"].(map[string]any)["error"].(map[string]any)
	assert.Equal(t, "js", errv["kind"])
	assert.Contains(t, errv["message"], "missing is not defined")
	good := lastPart(f.Bodies()[2])
	assert.Equal(t, "f2", good["id"])
	assert.Equal(t, map[string]any{"output": map[string]any{"result": map[string]any{"n": float64(3)}}}, good["response"])
}

// TestCodeMode: the agent's declarations (one with an OpenAPI-style
// Parameters schema, one with a JSON Schema) become run_js's API; a
// program calls both at once with Promise.all; the stop declaration stays
// plain and its call is left to the loop.
func TestCodeMode(t *testing.T) {
	overlap := fakeapi.Overlap(2)
	decls := []*genai.FunctionDeclaration{
		{Name: "get_weather", Description: "Current weather of a city.", Parameters: &genai.Schema{Type: genai.TypeObject,
			Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}, "units": {Type: genai.TypeString, Nullable: genai.Ptr(true)}},
			Required:   []string{"city"}, PropertyOrdering: []string{"city", "units"}}},
		{Name: "population", Description: "Population of a city.", ParametersJsonSchema: map[string]any{"type": "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		{Name: "final_answer", Description: "Ends the task."},
	}
	handle := func(_ context.Context, name string, args map[string]any) (map[string]any, error) {
		if err := overlap(); err != nil {
			return nil, err
		}
		if name == "get_weather" {
			return map[string]any{"output": map[string]any{"city": args["city"], "celsius": 21}}, nil
		}
		return map[string]any{"people": 2100000}, nil
	}
	wrapped, err := cmgenai.FromDeclarations(decls[:1], handle)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"},"units":{"type":["string","null"]}},"required":["city"]}`,
		string(wrapped[0].Definition().Parameters))

	cm, tool, err := cmgenai.CodeMode(decls, handle, []string{"final_answer"}, codemode.Limits{Deadline: 30 * time.Second})
	require.NoError(t, err)
	defer cm.Close()
	require.Len(t, tool.FunctionDeclarations, 2)
	f := fakeapi.New(
		reply(`[{"functionCall":{"id":"f1","name":"run_js","args":{"code":"const [w, p] = await Promise.all([get_weather({city: 'Paris'}), population({city: 'Paris'})]);\nreturn {city: w.city, celsius: w.celsius, people: p.people};"}}},{"functionCall":{"id":"f2","name":"final_answer","args":{}}}]`),
	)
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx := context.Background()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "test", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	require.NoError(t, err)
	resp, err := c.Models.GenerateContent(ctx, "gemini-test", genai.Text("Paris?"), &genai.GenerateContentConfig{Tools: []*genai.Tool{tool}})
	require.NoError(t, err)
	parts, rest, err := cmgenai.Answers(ctx, cm, resp)
	require.NoError(t, err)
	require.Len(t, rest, 1)
	assert.Equal(t, "final_answer", rest[0].Name)
	require.Len(t, parts, 1)
	assert.Equal(t, map[string]any{"output": map[string]any{"result": map[string]any{"city": "Paris", "celsius": float64(21), "people": float64(2100000)}}},
		parts[0].FunctionResponse.Response)
	var names []any
	for _, d := range f.Bodies()[0]["tools"].([]any)[0].(map[string]any)["functionDeclarations"].([]any) {
		names = append(names, d.(map[string]any)["name"])
	}
	assert.Equal(t, []any{"run_js", "final_answer"}, names)
}

// TestHandlerError: a Response carrying "error" (or a Go error) is the
// tool's failure in the script.
func TestHandlerError(t *testing.T) {
	for _, c := range []struct {
		resp map[string]any
		err  error
		want string
	}{
		{map[string]any{"error": "no such city"}, nil, "tool `lookup` failed: no such city"},
		{map[string]any{"error": map[string]any{"code": 404}}, nil, `tool ` + "`lookup`" + ` failed: {"code":404}`},
		{nil, errors.New("quota"), "tool `lookup` failed: quota"},
	} {
		wrapped, err := cmgenai.FromDeclarations([]*genai.FunctionDeclaration{{Name: "lookup"}},
			func(context.Context, string, map[string]any) (map[string]any, error) { return c.resp, c.err })
		require.NoError(t, err)
		cm, err := codemode.NewCodeModeTool(wrapped, codemode.Limits{Deadline: 10 * time.Second})
		require.NoError(t, err)
		out, err := cm.Call(context.Background(), json.RawMessage(`{"code":"try { await lookup({}) } catch (e) { return e.message }"}`))
		cm.Close()
		require.NoError(t, err)
		want, _ := json.Marshal(map[string]string{"result": c.want})
		assert.Equal(t, string(want), string(out))
	}
}

func TestNoHandler(t *testing.T) {
	_, err := cmgenai.FromDeclarations(nil, nil)
	assert.EqualError(t, err, "codemode: no Handler for the declarations")
}
