//go:build cgo

package codemode

import "context"

// Runner is what runs programs: the local [*Executor], and the remote
// client of package github.com/codemode-go/codemode/remote (the daemon
// arrangement: programs run on another machine and every tool call travels
// back to the caller). A service written against Runner switches between
// them by changing one constructor.
type Runner interface {
	// Run executes a run_js script (see [Executor.Run]).
	Run(ctx context.Context, script string) (*Result, error)
	// Execute runs a provider program (see [Executor.Execute]).
	Execute(ctx context.Context, req Request) ExecuteResult
	// Close releases the runner; later calls fail.
	Close() error
}

var _ Runner = (*Executor)(nil)
