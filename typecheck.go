//go:build cgo

package codemode

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// TypeChecker checks a program against the declarations the model was
// shown, before it runs: the typescript module's Checker, which is
// TypeScript's own compiler (typescript.NewChecker). The root package
// holds only this seam.
type TypeChecker interface {
	// CheckProgram returns the problems that predict the program fails
	// when it runs, at positions in the program's own text.
	CheckProgram(ctx context.Context, in TypeCheckInput) ([]TypeDiagnostic, error)
}

// TypeCheckInput is what a check reads.
type TypeCheckInput struct {
	Program      string // the model's program, in any shape a run takes
	Declarations string // the TypeScript declarations of what it may call
	Network      bool   // fetch and its classes exist
}

// TypeDiagnostic is one problem a check found: 1-based line and column in
// the model's program, TypeScript's code and its one-line message.
type TypeDiagnostic struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// String is "line:column TScode message".
func (d TypeDiagnostic) String() string {
	return fmt.Sprintf("%d:%d TS%d %s", d.Line, d.Column, d.Code, d.Message)
}

// TypeCheck says what a run does with a type check.
type TypeCheck int

const (
	// TypeCheckDefault is the executor's mode (WithTypeCheck), for a
	// request or a context that names none.
	TypeCheckDefault TypeCheck = iota
	// TypeCheckOff runs without a check.
	TypeCheckOff
	// TypeCheckWarn checks, runs whatever the check says, and attaches
	// its diagnostics to the result (Result.Diagnostics,
	// ExecuteResult.Diagnostics) so the model sees them.
	TypeCheckWarn
	// TypeCheckEnforce refuses a program the check finds problems in
	// before any of it runs: an [*ExecError] of kind [KindTypeError]
	// listing them (at most MaxTypeDiagnostics).
	TypeCheckEnforce
)

// KindTypeError: the program was refused before it ran, for problems a
// type check found against its declarations (ExecError.Diagnostics).
const KindTypeError ErrorKind = "type_error"

// MaxTypeDiagnostics bounds the diagnostics an error or a result carries:
// the first few, in the program's order.
const MaxTypeDiagnostics = 5

// WithTypeCheck checks every run's program with c before it runs, in mode
// (a request's Request.TypeCheck, or a Run's WithTypeCheckMode, may say
// otherwise; TypeCheckOff, or Default, gives the runs that ask a
// checker). Call and Register are not checked (the host's own code). Run programs are checked against the executor's
// capabilities (as granted), Execute programs against their providers and
// the capabilities. New refuses a nil checker.
func WithTypeCheck(c TypeChecker, mode TypeCheck) Option {
	return func(cfg *config) error {
		if c == nil {
			return fmt.Errorf("%w: WithTypeCheck needs a checker (typescript.NewChecker)", ErrInvalidLimits)
		}
		if mode < TypeCheckDefault || mode > TypeCheckEnforce {
			return fmt.Errorf("%w: unknown type check mode %d", ErrInvalidLimits, mode)
		}
		if mode == TypeCheckDefault {
			mode = TypeCheckOff
		}
		cfg.checker, cfg.checkMode = c, mode
		return nil
	}
}

type typeCheckKey struct{}

// WithTypeCheckMode returns a context whose runs (Run, and Execute when
// its Request says nothing) check in mode instead of the executor's.
func WithTypeCheckMode(ctx context.Context, mode TypeCheck) context.Context {
	return context.WithValue(ctx, typeCheckKey{}, mode)
}

// typeCheckMode is the mode of a run: the request's, ctx's, the
// executor's.
func (e *Executor) typeCheckMode(ctx context.Context, req TypeCheck) TypeCheck {
	if req != TypeCheckDefault {
		return req
	}
	if m, ok := ctx.Value(typeCheckKey{}).(TypeCheck); ok && m != TypeCheckDefault {
		return m
	}
	if e.checker == nil {
		return TypeCheckOff
	}
	return e.checkMode
}

// typeCheck checks p before it runs, in mode: the diagnostics to attach
// (warn), or the error that refuses the run (enforce).
func (e *Executor) typeCheck(ctx context.Context, p *program, mode TypeCheck, caps *capTable) ([]TypeDiagnostic, *ExecError) {
	if mode == TypeCheckOff || mode == TypeCheckDefault {
		return nil, nil
	}
	if e.checker == nil {
		return nil, &ExecError{Kind: KindInvalidArgs, Name: p.name, Reason: "a type check was asked of an executor without a checker (WithTypeCheck)"}
	}
	var decl strings.Builder
	if len(p.providers) > 0 {
		decl.WriteString(ProviderDeclarations(p.providers))
	}
	if len(caps.caps) > 0 {
		apis := make([]ToolAPI, 0, len(caps.caps))
		for _, c := range caps.caps {
			apis = append(apis, c.API())
		}
		decl.WriteString(Declarations(apis))
	}
	in := TypeCheckInput{Program: p.smap.src, Declarations: decl.String(), Network: p.outbound != nil}
	ds, err := e.checks.check(ctx, e.checker, in)
	if err != nil {
		return nil, internalError(p.name, fmt.Errorf("type check: %w", err))
	}
	if len(ds) > MaxTypeDiagnostics {
		ds = ds[:MaxTypeDiagnostics]
	}
	if len(ds) > 0 && mode == TypeCheckEnforce {
		return nil, &ExecError{Kind: KindTypeError, Name: p.name, Diagnostics: ds}
	}
	return ds, nil
}

// checkMemo remembers the last checks' diagnostics: a program checked
// again against the same declarations (a service's, a batch's) is not.
type checkMemo struct {
	mu sync.Mutex
	m  map[TypeCheckInput][]TypeDiagnostic
}

// checkMemoSize bounds the memo; past it, it starts afresh.
const checkMemoSize = 1024

func (m *checkMemo) check(ctx context.Context, c TypeChecker, in TypeCheckInput) ([]TypeDiagnostic, error) {
	m.mu.Lock()
	ds, ok := m.m[in]
	m.mu.Unlock()
	if ok {
		return ds, nil
	}
	ds, err := c.CheckProgram(ctx, in)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.m == nil || len(m.m) >= checkMemoSize {
		m.m = map[TypeCheckInput][]TypeDiagnostic{}
	}
	m.m[in] = ds
	m.mu.Unlock()
	return ds, nil
}
