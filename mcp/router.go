package mcp

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/codemode-go/codemode"
)

// Route is one provider a [Router] serves: an [Upstream], or tools served
// in Go ([GoProvider]).
type Route interface {
	Provider() codemode.Provider
	Dispatch(ctx context.Context, provider, tool, argsJSON string) (string, error)
}

// GoProvider is a provider served by a Go DispatchFunc: Provider.Tools
// lists what the router lets through.
type GoProvider struct {
	P codemode.Provider
	D codemode.DispatchFunc
}

// Provider returns P.
func (g GoProvider) Provider() codemode.Provider { return g.P }

// Dispatch calls D.
func (g GoProvider) Dispatch(ctx context.Context, provider, tool, argsJSON string) (string, error) {
	return g.D(ctx, provider, tool, argsJSON)
}

// Router composes providers into one dispatch. It routes only the tools
// its providers list, each to its own provider: any other provider or tool
// name — one the program made up, one of another provider, a forged
// __dispatch call — is [codemode.ToolNotFoundError], and reaches no one.
type Router struct {
	routes    map[string]Route
	tools     map[string]map[string]bool
	providers []codemode.Provider
}

// NewRouter makes a router of routes; two providers of one name are
// refused.
func NewRouter(routes ...Route) (*Router, error) {
	r := &Router{routes: map[string]Route{}, tools: map[string]map[string]bool{}}
	for _, rt := range routes {
		p := rt.Provider()
		if _, dup := r.routes[p.Name]; dup {
			return nil, fmt.Errorf("mcp: two providers are named %q", p.Name)
		}
		r.routes[p.Name] = rt
		set := map[string]bool{}
		for _, t := range p.Tools {
			set[t] = true
		}
		r.tools[p.Name] = set
		r.providers = append(r.providers, p)
	}
	return r, nil
}

// Providers are the router's namespaces, for [codemode.Request.Providers].
func (r *Router) Providers() []codemode.Provider { return slices.Clip(r.providers) }

// Effects are the effects its routes declare of their tools (an
// Upstream's read-only tools), by policy name: the Tools of a
// codemode.Governance to merge under the host's own policies.
func (r *Router) Effects() map[string]codemode.Effect {
	out := map[string]codemode.Effect{}
	for _, rt := range r.routes {
		if e, ok := rt.(interface {
			Effects() map[string]codemode.Effect
		}); ok {
			maps.Copy(out, e.Effects())
		}
	}
	return out
}

// Dispatch routes a call; see [Router].
func (r *Router) Dispatch(ctx context.Context, provider, tool, argsJSON string) (string, error) {
	if !r.tools[provider][tool] {
		return "", codemode.ToolNotFoundError{Tool: tool}
	}
	return r.routes[provider].Dispatch(ctx, provider, tool, argsJSON)
}
