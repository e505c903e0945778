// Command capabilities is the library in a Go service whose tools are Go
// functions: typed capabilities (codemode.Func) a script calls as globals,
// its arguments checked against the schemas inferred from the Go types, one
// JSON value back.
//
//	go run ./capabilities
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/codemode-go/codemode"
)

type userQuery struct {
	ID int `json:"id" jsonschema:"required"`
}

type user struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Team string `json:"team"`
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	users := map[int]user{1: {1, "Ada", "core"}, 2: {2, "Grace", "core"}, 3: {3, "Linus", "infra"}}
	getUser := codemode.Func("get_user", "Looks a user up by id.", func(_ context.Context, q userQuery) (user, error) {
		u, ok := users[q.ID]
		if !ok {
			return user{}, fmt.Errorf("no user %d", q.ID)
		}
		return u, nil
	})
	exec, err := codemode.New(codemode.WithCapability(getUser))
	if err != nil {
		return err
	}
	defer exec.Close()
	// What a model would be told of the tools, then a program it might write.
	fmt.Fprintln(out, codemode.Declarations([]codemode.ToolAPI{getUser.API()}))
	res, err := exec.Run(ctx, `
const team = {};
for (const id of [1, 2, 3]) {
  const u = get_user({id});
  (team[u.team] ??= []).push(u.name);
}
let missing;
try { get_user({id: 9}) } catch (e) { missing = e.message }
return {team, missing}`)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (%d host calls)\n", res.Value, res.Stats.HostCalls)
	return nil
}
