// Command providers is Executor.Execute: tools behind one dispatch
// function (MCP servers, remote APIs), each provider a namespace in the
// program's scope, every call an async one that comes back to the
// DispatchFunc with the provider, the tool and the arguments as JSON.
//
//	go run ./providers
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/codemode-go/codemode"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	exec, err := codemode.New()
	if err != nil {
		return err
	}
	defer exec.Close()
	prices := map[string]float64{"apple": 0.5, "pear": 0.75}
	providers := []codemode.Provider{
		{Name: "shop", ObjectArgs: true, Tools: []string{"price"}, APIs: []codemode.ProviderTool{{Name: "price",
			Description: "The price of an item.",
			Params:      []byte(`{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`),
			Returns:     []byte(`{"type":"number"}`)}}},
		{Name: "text", Tools: []string{"upper"}},
	}
	// EnvelopeDispatch wraps a handler that returns a value or an error.
	dispatch := codemode.EnvelopeDispatch(nil, func(_ context.Context, provider, tool, args string) (any, error) {
		switch provider + "." + tool {
		case "shop.price":
			var a struct{ Item string }
			if err := json.Unmarshal([]byte(args), &a); err != nil {
				return nil, err
			}
			p, ok := prices[a.Item]
			if !ok {
				return nil, fmt.Errorf("no price for %s", a.Item)
			}
			return p, nil
		case "text.upper":
			a, err := codemode.ParseDispatchArguments(args)
			if err != nil || len(a) != 1 {
				return nil, fmt.Errorf("upper takes one string")
			}
			s, _ := a[0].(string)
			return strings.ToUpper(s), nil
		}
		return nil, fmt.Errorf("no tool %s.%s", provider, tool)
	})
	fmt.Fprintln(out, codemode.ProviderDeclarations(providers))
	res := exec.Execute(ctx, codemode.Request{Providers: providers, Dispatch: dispatch, Code: `async () => {
  const items = ["apple", "pear"];
  const prices = await Promise.all(items.map((item) => shop.price({item})));
  return {total: prices.reduce((a, b) => a + b, 0), shout: await text.upper("done")};
}`})
	if res.Error != "" {
		return fmt.Errorf("%s", res.Error)
	}
	fmt.Fprintf(out, "%s (%d tool calls)\n", res.Result, res.Stats.HostCalls)
	return nil
}
