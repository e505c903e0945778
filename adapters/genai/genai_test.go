package genai_test

import (
	"context"
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
