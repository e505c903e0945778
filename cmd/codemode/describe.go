package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/codemode-go/codemode"
)

const describeHelp = `Prints what a model is told about a tool list: the run_js description (the
execution contract, the declarations, an example) and then the TypeScript
declarations alone. TOOLS.json (- for stdin) is a JSON array of tools:

  [{"name": "get_user", "description": "Looks a user up.",
    "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    "returns": {"type": "object"}}]

("inputSchema" and "outputSchema", as MCP names them, are taken too; names are
made JavaScript identifiers as run_js does). Tools return promises, as a
CodeModeTool's do by default (the example awaits them); "async": false marks
one synchronous, as with WithSyncTools.

With --tools, --dispatch-cmd (and --providers) or --mcp instead of a file,
it prints what a model is told of the providers run and batch give programs
that way: the contract, their declarations and an example call.

Examples:
  codemode describe tools.json
  codemode describe --tools fixtures.json
  codemode describe --mcp servers.json
  codemode describe --json tools.json
`

// toolSpec is one entry of a tools file.
type toolSpec struct {
	Name         string          `json:"name"`
	JSName       string          `json:"jsName"`
	Description  string          `json:"description"`
	Parameters   json.RawMessage `json:"parameters"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	Returns      json.RawMessage `json:"returns"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Async        *bool           `json:"async"` // default true, as CodeModeTool's tools
}

func cmdDescribe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("describe", "[flags] TOOLS.json|-", describeHelp, stderr)
	asJSON := fs.Bool("json", false, `print {"description", "declarations"} as JSON`)
	tf := &toolFlags{}
	fs.StringVar(&tf.fixtures, "tools", "", "describe the providers of this --tools file of canned answers (as run and batch take it)")
	fs.StringVar(&tf.dispatchCmd, "dispatch-cmd", "", "describe the providers --providers names, served by this command (as run and batch take it; not started)")
	fs.StringVar(&tf.providers, "providers", "", "comma-separated provider names --dispatch-cmd serves")
	fs.StringVar(&tf.mcp, "mcp", "", "describe the tools of this mcpServers file's servers (started to list them)")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if !tf.none() {
		if fs.NArg() != 0 {
			return usageLine(fs, "give a tools file or --tools/--dispatch-cmd/--mcp, not both")
		}
		return describeProviders(ctx, tf, *asJSON, stdout, stderr)
	}
	if fs.NArg() != 1 {
		return usageLine(fs, "give one tools file, or - for stdin (or --tools, --dispatch-cmd or --mcp)")
	}
	var data []byte
	var err error
	if fs.Arg(0) == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		return exitFor(stderr, usagef("%v", err))
	}
	var specs []toolSpec
	if err := json.Unmarshal(data, &specs); err != nil {
		return exitFor(stderr, usagef(`%s: want a JSON array of tools, [{"name", "description", "parameters", "returns", "async"}]: %v`, fs.Arg(0), jsonProblem(err)))
	}
	apis := make([]codemode.ToolAPI, 0, len(specs))
	for i, s := range specs {
		name := s.JSName
		if name == "" {
			name = s.Name
		}
		if name == "" {
			return exitFor(stderr, usagef("%s: tool %d has no name", fs.Arg(0), i+1))
		}
		params := s.Parameters
		if params == nil {
			params = s.InputSchema
		}
		returns := s.Returns
		if returns == nil {
			returns = s.OutputSchema
		}
		apis = append(apis, codemode.ToolAPI{JSName: codemode.JSIdentifier(name), Description: s.Description,
			Parameters: params, Returns: returns, Async: s.Async == nil || *s.Async})
	}
	desc, decl := codemode.Describe(apis), codemode.Declarations(apis)
	if *asJSON {
		b, _ := json.MarshalIndent(map[string]string{"description": desc, "declarations": decl}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s\n\n%s\n", desc, decl)
	return exitOK
}

// jsonProblem words a decoding error without Go's types: "cannot
// unmarshal object into Go value of type []main.toolSpec" says the JSON
// is an object where an array was wanted.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := ""
		if te.Field != "" {
			where = " at " + te.Field
		}
		return fmt.Sprintf("found a JSON %s%s where %s was wanted", te.Value, where, jsonKind(te.Type))
	}
	return err.Error()
}

// jsonKind is what JSON a Go type reads.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another value"
}

// describeProviders prints what a model is told of the providers a
// --tools, --dispatch-cmd or --mcp setup gives run and batch programs:
// the contract, the declarations and an example (DescribeProviders). A
// --dispatch-cmd's tools are whatever it serves: its providers are
// declared with no tool listed, and the command is not started.
func describeProviders(ctx context.Context, tf *toolFlags, asJSON bool, stdout, stderr io.Writer) int {
	// The toolbox run and batch open, its command left unstarted: the
	// same providers in the same order, refused for the same reasons.
	tf.startTimeout, tf.listOnly = defaultStartTimeout, true
	tb, err := tf.open(ctx, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	providers := tb.providers
	if err := tb.close(); err != nil {
		fmt.Fprintf(stderr, "codemode: %v\n", err)
	}
	desc, decl := codemode.DescribeProviders(providers), codemode.ProviderDeclarations(providers)
	if asJSON {
		b, _ := json.MarshalIndent(map[string]string{"description": desc, "declarations": decl}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s\n", desc)
	return exitOK
}
