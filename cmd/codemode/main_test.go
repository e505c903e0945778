package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"codemode": func() { os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		// fakedispatch serves --dispatch-cmd's protocol: add sums its
		// arguments, echo returns them, fail answers an error, slow waits
		// its first argument in ms, meet answers once its first argument
		// of meet calls wait (a rendezvous: the calls overlap), and die exits the process (status 3)
		// with the call in flight. With FAKEDISPATCH_DIE_AFTER=n it exits
		// on its n-th call instead (the ping, id 0, is no call: it answers
		// it as a tool it does not have, as a program written before the
		// ping would), and with FAKEDISPATCH_START_DELAY=d it sleeps d
		// before it reads its first line; with FAKEDISPATCH_LOG=f it
		// appends each call to f as a line "provider.tool args".
		"fakedispatch": fakeDispatch,
		// fakemcp is a stdio MCP server: add({a, b}) answers {sum} as
		// structured content, echo({x}) x as JSON text, block waits for
		// its call's cancellation, die exits the process (status 3). With
		// FAKEMCP_START_DELAY=d it sleeps d before it serves.
		"fakemcp": fakeMCP,
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

func fakeMCP() {
	s := mcp.NewServer(&mcp.Implementation{Name: "fakemcp", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	tool := func(name, desc string, h func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			json.Unmarshal(req.Params.Arguments, &args)
			return h(ctx, args)
		})
	}
	tool("add", "Adds a and b.", func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		x, _ := a["a"].(float64)
		y, _ := a["b"].(float64)
		return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": x + y}}, nil
	})
	tool("echo", "Echoes x as JSON text.", func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(a["x"])
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	tool("block", "Waits for its cancellation.", func(ctx context.Context, _ map[string]any) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tool("die", "Exits the server.", func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "fakemcp: dying as asked")
		os.Exit(3)
		return nil, nil
	})
	if d, err := time.ParseDuration(os.Getenv("FAKEMCP_START_DELAY")); err == nil {
		time.Sleep(d)
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

func fakeDispatch() {
	dieAfter, _ := strconv.Atoi(os.Getenv("FAKEDISPATCH_DIE_AFTER"))
	if d, err := time.ParseDuration(os.Getenv("FAKEDISPATCH_START_DELAY")); err == nil {
		time.Sleep(d)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := make(chan []byte, 64)
	done := make(chan struct{})
	go func() {
		w := bufio.NewWriter(os.Stdout)
		for b := range out {
			w.Write(b)
			w.WriteByte('\n')
			if len(out) == 0 {
				w.Flush()
			}
		}
		w.Flush()
		close(done)
	}()
	calls := 0
	var meet []uint64
	var slow sync.WaitGroup
	for in.Scan() {
		var c struct {
			ID       uint64          `json:"id"`
			Provider string          `json:"provider"`
			Tool     string          `json:"tool"`
			Args     json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, "fakedispatch: bad line:", err)
			os.Exit(2)
		}
		if c.ID != 0 {
			calls++
			if log := os.Getenv("FAKEDISPATCH_LOG"); log != "" {
				f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err == nil {
					fmt.Fprintf(f, "%s.%s %s\n", c.Provider, c.Tool, c.Args)
					f.Close()
				}
			}
		}
		if c.Tool == "die" || (dieAfter > 0 && calls >= dieAfter) {
			fmt.Fprintln(os.Stderr, "fakedispatch: dying as asked")
			os.Exit(3)
		}
		var args []float64
		json.Unmarshal(c.Args, &args)
		answer := func(v any) {
			b, _ := json.Marshal(v)
			out <- b
		}
		switch c.Tool {
		case "add":
			sum := 0.0
			for _, a := range args {
				sum += a
			}
			answer(map[string]any{"id": c.ID, "result": sum})
		case "echo":
			answer(map[string]any{"id": c.ID, "result": c.Args})
		case "fail":
			answer(map[string]any{"id": c.ID, "error": "the tool failed as asked"})
		case "meet": // answers once args[0] meet calls are waiting: a rendezvous
			meet = append(meet, c.ID)
			if len(args) > 0 && len(meet) >= int(args[0]) {
				for _, id := range meet {
					answer(map[string]any{"id": id, "result": "met"})
				}
				meet = nil
			}
		case "slow":
			slow.Add(1)
			go func() {
				defer slow.Done()
				if len(args) > 0 {
					time.Sleep(time.Duration(args[0]) * time.Millisecond)
				}
				answer(map[string]any{"id": c.ID, "result": "slept"})
			}()
		default:
			answer(map[string]any{"id": c.ID, "error": fmt.Sprintf("Tool %q not found", c.Tool)})
		}
	}
	slow.Wait()
	close(out)
	<-done
}
