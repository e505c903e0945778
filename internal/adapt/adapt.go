// Package adapt is what the SDK adapters share: an agent's tool set split
// into the tools that become the sandbox's API and the plain tools (stop
// tools, hand-offs) kept beside run_js so the loop can still end.
package adapt

import (
	"fmt"
	"slices"

	"github.com/codemode-go/codemode"
)

// Split returns the tools whose names are not in plain (the sandbox's
// API) and those whose names are (kept plain), in their order. A name in
// plain that no tool has, or run_js itself, is an error: a misspelt stop
// tool would otherwise vanish into the sandbox and the loop never end.
func Split[T any](tools []T, name func(T) string, plain []string) (api, kept []T, err error) {
	seen := make([]bool, len(plain))
	for _, t := range tools {
		n := name(t)
		if n == codemode.RunJSToolName {
			return nil, nil, fmt.Errorf("codemode: a tool is named %s, the code tool's own name", n)
		}
		i := slices.Index(plain, n)
		if i < 0 {
			api = append(api, t)
			continue
		}
		seen[i] = true
		kept = append(kept, t)
	}
	for i, ok := range seen {
		if !ok {
			return nil, nil, fmt.Errorf("codemode: plain tool %q is not among the tools", plain[i])
		}
	}
	return api, kept, nil
}

// CodeMode is an adapter's CodeMode: tools split by plain ([Split]), the
// sandbox's share made codemode.Tools by wrap, and a new code tool over
// them, with the plain tools to set beside it.
func CodeMode[T any](tools []T, name func(T) string, plain []string, wrap func([]T) ([]codemode.Tool, error),
	limits codemode.Limits, opts ...codemode.Option) (*codemode.CodeModeTool, []T, error) {
	api, kept, err := Split(tools, name, plain)
	if err != nil {
		return nil, nil, err
	}
	wrapped, err := wrap(api)
	if err != nil {
		return nil, nil, err
	}
	cm, err := codemode.NewCodeModeTool(wrapped, limits, opts...)
	if err != nil {
		return nil, nil, err
	}
	return cm, kept, nil
}
