package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nestedSchema nests n levels of "properties" around a string schema.
func nestedSchema(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// TestSchemaLoadsNothing: a schema can refer only to itself. A reference
// to a real file on this machine is refused without reading it.
func TestSchemaLoadsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"const":"TOPSECRET-7f3a"}`), 0o600))
	fileURL := "file://" + filepath.ToSlash(secret)
	refusal := func(ref string) string {
		return `{"stage":"invalid_schema","reason":"the schema refers to \"` + ref + `\", outside itself: codemode loads ` +
			`no file or URL, so a schema may refer only to its own parts (\"#/$defs/...\", \"#/properties/...\")"}`
	}
	tests := []struct {
		name, schema, want string
	}{
		{"absolute file", `{"type":"object","properties":{"a":{"$ref":"` + fileURL + `"}}}`, refusal(fileURL)},
		{"file with a pointer", `{"type":"object","properties":{"a":{"$ref":"` + fileURL + `#/const"}}}`, refusal(fileURL)},
		{"relative file", `{"type":"object","properties":{"a":{"$ref":"secret.json"}}}`, refusal("secret.json")},
		{"parent directory", `{"type":"object","properties":{"a":{"$ref":"../../etc/passwd"}}}`, refusal("etc/passwd")},
		{"network", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json#/a"}}}`,
			refusal("https://example.com/s.json")},
		{"dynamic ref", `{"type":"object","properties":{"a":{"$dynamicRef":"` + fileURL + `"}}}`, refusal(fileURL)},
		{"meta-schema elsewhere", `{"$schema":"https://example.com/meta","type":"object"}`, refusal("https://example.com/meta")},
		{"relative to an $id", `{"$id":"https://example.com/root.json","type":"object","properties":{"a":{"$ref":"other.json"}}}`,
			refusal("https://example.com/other.json")},
		{"internal $defs", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`, ""},
		{"internal under an $id", `{"$id":"https://example.com/r.json","type":"object","properties":{"a":{"$ref":"#/$defs/s"}},` +
			`"$defs":{"s":{"type":"string"}}}`, ""},
		{"draft-07 definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",` +
			`"properties":{"a":{"$ref":"#/definitions/s"}},"definitions":{"s":{"type":"string"}}}`, ""},
		{"missing internal", `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`,
			`{"stage":"invalid_schema","reason":"json-pointer in \"#/$defs/nope\" not found"}`},
	}
	e := newExecutor(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := ToolSource{Name: fmt.Sprintf("t%d", i), Params: json.RawMessage(tt.schema), Source: "(a) => a"}
			err := e.Validate(src)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			re := registerErr(t, err)
			assert.Equal(t, tt.want, re.LLMJSON())
			assert.NotContains(t, re.LLMJSON(), "TOPSECRET")
			_, err = e.Register(context.Background(), src)
			assert.Equal(t, tt.want, registerErr(t, err).LLMJSON())
		})
	}
	t.Run("internal refs validate", func(t *testing.T) {
		_, err := e.Register(context.Background(), ToolSource{Name: "defs", Source: "(a) => a.a",
			Params: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`)})
		require.NoError(t, err)
		_, err = e.Call(context.Background(), "defs", json.RawMessage(`{"a":1}`))
		assert.Equal(t, `{"kind":"invalid_args","name":"defs","reason":"`+"`a`"+`: got number, want string"}`, execErr(t, err).LLMJSON())
	})
}

// TestSchemaBounds: size and nesting are refused before compiling, so a
// hostile schema costs a linear scan, not the compiler's time.
func TestSchemaBounds(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	deep := nestedSchema(3000) // ~100 KiB; compiling it took over 10 s
	wide := `{"type":"object","properties":{"a":{"type":"string","description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}}}`
	tests := []struct {
		name, schema, reason string
	}{
		{"3,000 levels", deep, "the schema nests deeper than 128 levels of objects and arrays"},
		{"65 levels", nestedSchema(65), "the schema nests deeper than 128 levels of objects and arrays"},
		{"arrays count", `{"type":"object","default":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
			"the schema nests deeper than 128 levels of objects and arrays"},
		{"brackets in strings do not", `{"type":"object","description":"` + strings.Repeat("[{", 500) + `"}`, ""},
		{"64 levels", nestedSchema(63), ""},
		{"over the size", wide, fmt.Sprintf("the schema is %d bytes; at most %d are allowed", len(wide), MaxSchemaBytes)},
		{"not UTF-8", "{\"type\":\"object\",\"description\":\"\xff\"}", "the schema is not valid UTF-8"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := e.Validate(ToolSource{Name: fmt.Sprintf("b%d", i), Params: json.RawMessage(tt.schema), Source: "(a) => a"})
			if tt.reason == "" {
				require.NoError(t, err)
				return
			}
			re := registerErr(t, err)
			assert.Equal(t, StageInvalidSchema, re.Stage)
			assert.Equal(t, tt.reason, re.Reason)
			// Generous: the refusal is a scan of the text (microseconds).
			assert.Less(t, time.Since(start), 2*time.Second)
		})
	}
}

func TestJSONDepth(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]int{
		`1`: 0, `{}`: 1, `[[]]`: 2, `{"a":[{}]}`: 3, `"[[["`: 0, `"\"[["`: 0, `["\\",[1]]`: 2, `{"a":"}}}","b":{}}`: 2,
	} {
		assert.Equal(t, want, jsonDepth([]byte(text)), "jsonDepth(%s)", text)
	}
}
