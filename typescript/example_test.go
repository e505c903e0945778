package typescript_test

import (
	"context"
	"fmt"

	"github.com/codemode-go/codemode"
	_ "github.com/codemode-go/codemode/typescript"
)

// Importing the package is enough: every executor made afterwards runs
// TypeScript, with errors at the TypeScript source's positions.
func Example() {
	e, err := codemode.New()
	if err != nil {
		panic(err)
	}
	defer e.Close()
	res, err := e.Run(context.Background(), "```ts\ninterface Point { x: number; y: number }\nconst p: Point = { x: 3, y: 4 };\nMath.hypot(p.x, p.y)\n```")
	fmt.Println(string(res.Value), err)
	_, err = e.Run(context.Background(), "const a: number = 1;\nconst b: number = a +;")
	fmt.Println(err)
	// Output:
	// 5 <nil>
	// codemode: run_js: SyntaxError: Unexpected ";"
	//     at script.js:2:22
}
