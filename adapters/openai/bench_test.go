package openai_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/codemode-go/codemode"
	cmopenai "github.com/codemode-go/codemode/adapters/openai"
)

// BenchmarkAnswer: what the adapter adds to a run_js call — ChatAnswers
// over a parsed message against Invoke with the same arguments.
func BenchmarkAnswer(b *testing.B) {
	cm, err := codemode.NewCodeModeTool(nil, codemode.Limits{Deadline: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer cm.Close()
	args := `{"code":"return [1, 2, 3].map((x) => x * 2)"}`
	var msg openai.ChatCompletionMessage
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"run_js","arguments":`+
		string(must(json.Marshal(args)))+`}}]}`), &msg); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("invoke", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cm.Invoke(ctx, json.RawMessage(args)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("chat-answers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := cmopenai.ChatAnswers(ctx, cm, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
