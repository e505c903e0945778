//go:build cgo

package codemode

import (
	"errors"
	"fmt"
	"time"
)

// Limits are the resources one run may use. The zero value of a field means
// its default (see [DefaultLimits]), never "unlimited". Limits is a plain
// value: the executor copies it on construction.
type Limits struct {
	// Memory is the most heap, in bytes, the engine may hold for one run.
	// An allocation past it kills the run with a memory_exceeded error.
	Memory int
	// Stack is the most native stack, in bytes, JavaScript may use. Deep
	// recursion past it throws a catchable RangeError inside the script.
	Stack int
	// Payload bounds, in bytes, the JSON a run returns and (with providers)
	// each host call's provider name, tool name and arguments.
	Payload int
	// Logs bounds the console text kept per run, in bytes (each line counts
	// one more for its end). Past it lines are dropped and counted.
	Logs int
	// Deadline is the wall-clock budget of one run, counted from the moment
	// the API is entered. Time spent in host calls counts too.
	Deadline time.Duration
}

// Default values of each [Limits] field.
const (
	DefaultMemory   = 32 << 20
	DefaultStack    = 512 << 10
	DefaultPayload  = 1 << 20
	DefaultLogs     = 64 << 10
	DefaultDeadline = 500 * time.Millisecond

	// MinMemory is the smallest Memory limit New accepts: below it a
	// sandbox cannot even be built.
	MinMemory = 1 << 20
	// MinStack is the smallest Stack limit New accepts.
	MinStack = 32 << 10
)

// ErrInvalidLimits is wrapped by the error New returns for limits it refuses.
var ErrInvalidLimits = errors.New("codemode: invalid limits")

// DefaultLimits returns the limits used for zero fields: Memory 32 MiB,
// Stack 512 KiB, Payload 1 MiB, Logs 64 KiB, Deadline 500 ms.
func DefaultLimits() Limits {
	return Limits{
		Memory:   DefaultMemory,
		Stack:    DefaultStack,
		Payload:  DefaultPayload,
		Logs:     DefaultLogs,
		Deadline: DefaultDeadline,
	}
}

// WithDefaults is l with its zero fields the library's defaults
// ([DefaultLimits]): the limits an Executor made WithLimits(l) runs under,
// for a surface that must ask another for the same (a daemon's client).
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.Stack == 0 {
		l.Stack = d.Stack
	}
	if l.Payload == 0 {
		l.Payload = d.Payload
	}
	if l.Logs == 0 {
		l.Logs = d.Logs
	}
	if l.Deadline == 0 {
		l.Deadline = d.Deadline
	}
	return l
}

// validate checks limits that already have their defaults.
func (l Limits) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidLimits, fmt.Sprintf(format, args...))
	}
	switch {
	case l.Memory < 0, l.Stack < 0, l.Payload < 0, l.Logs < 0, l.Deadline < 0:
		return bad("negative value in %+v", l)
	case l.Memory < MinMemory:
		return bad("Memory %d is below the minimum of %d bytes", l.Memory, MinMemory)
	case l.Stack < MinStack:
		return bad("Stack %d is below the minimum of %d bytes", l.Stack, MinStack)
	case l.Stack > MaxStack():
		return bad("Stack %d is above the safe maximum of %d bytes for this process's threads", l.Stack, MaxStack())
	}
	return nil
}
