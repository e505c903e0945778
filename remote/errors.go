package remote

import (
	"context"
	"errors"
	"math"
	"unicode/utf8"

	"google.golang.org/grpc/status"

	"github.com/codemode-go/codemode"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// sentinels are the errors an ExecError's identity is told by on the wire
// (pb.ExecError.matches): every error value of codemode's and of the
// context package that an ExecError may match with errors.Is.
var sentinels = []struct {
	s   pb.Sentinel
	err error
}{
	{pb.Sentinel_SENTINEL_CANCELED, context.Canceled},
	{pb.Sentinel_SENTINEL_DEADLINE_EXCEEDED, context.DeadlineExceeded},
	{pb.Sentinel_SENTINEL_TIMEOUT, codemode.ErrTimeout},
	{pb.Sentinel_SENTINEL_CLOSED, codemode.ErrClosed},
	{pb.Sentinel_SENTINEL_BUSY, codemode.ErrBusy},
	{pb.Sentinel_SENTINEL_MEMORY_BUDGET, codemode.ErrMemoryBudget},
	{pb.Sentinel_SENTINEL_RETAINED_CLOSED, codemode.ErrRetainedClosed},
	{pb.Sentinel_SENTINEL_NIL_CONTEXT, codemode.ErrNilContext},
	{pb.Sentinel_SENTINEL_CONTINUATION, codemode.ErrContinuation},
	{pb.Sentinel_SENTINEL_CONTINUATION_EXPIRED, codemode.ErrContinuationExpired},
	{pb.Sentinel_SENTINEL_INVALID_DECISION, codemode.ErrInvalidDecision},
	{pb.Sentinel_SENTINEL_INVALID_LIMITS, codemode.ErrInvalidLimits},
}

// toPBError is ee whole for the wire; err is the error ee was found in
// (what errors.Is is asked of: ee itself, or an error wrapping it).
func toPBError(ee *codemode.ExecError, err error) *pb.ExecError {
	d := &pb.ExecError{Kind: string(ee.Kind), Name: []byte(ee.Name), Message: []byte(ee.Message), Reason: []byte(ee.Reason),
		Capability: []byte(ee.Capability), DeadlineMs: ee.DeadlineMS, LimitBytes: ee.LimitBytes,
		Line: int32(min(ee.Line, math.MaxInt32)), Column: int32(min(ee.Column, math.MaxInt32))}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			d.Matches = append(d.Matches, s.s)
		}
	}
	return d
}

// fromPBError rebuilds the ExecError d describes: the same kind and
// fields, so the same Error and LLMJSON, and the same errors.Is answers
// for every sentinel; also errors.Is sees also through it (the status of
// a refusal), or nil. Sentinels this client does not know are ignored.
func fromPBError(d *pb.ExecError, also error) *codemode.ExecError {
	var causes []error
	for _, m := range d.Matches {
		for _, s := range sentinels {
			if s.s == m {
				causes = append(causes, s.err)
			}
		}
	}
	if also != nil {
		causes = append(causes, also)
	}
	ee := &codemode.ExecError{}
	if len(causes) > 0 {
		// InternalError is the one way to give an ExecError a cause from
		// outside the package; every field is then set to the daemon's.
		ee = codemode.InternalError("", errors.Join(causes...))
	}
	ee.Kind, ee.Name, ee.Message, ee.Reason, ee.Capability = codemode.ErrorKind(d.Kind), string(d.Name), string(d.Message),
		string(d.Reason), string(d.Capability)
	ee.DeadlineMS, ee.LimitBytes = d.DeadlineMs, d.LimitBytes
	ee.Line, ee.Column = max(int(d.Line), 0), max(int(d.Column), 0)
	return ee
}

// refusal is the Result a daemon's refusal carries as its status's detail
// (a program its memory budget had no room for), or nil.
func refusal(err error) *pb.Result {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if r, ok := d.(*pb.Result); ok && r.Err != nil {
			return r
		}
	}
	return nil
}

// texts are wire texts as Go strings; a nil slice stays nil.
func texts(b [][]byte) []string {
	if b == nil {
		return nil
	}
	s := make([]string, len(b))
	for i, t := range b {
		s[i] = string(t)
	}
	return s
}

// wireTexts are Go strings as wire texts; a nil slice stays nil.
func wireTexts(s []string) [][]byte {
	if s == nil {
		return nil
	}
	b := make([][]byte, len(s))
	for i, t := range s {
		b[i] = []byte(t)
	}
	return b
}

// headerSafe drops the entries of a trace carrier that a protobuf string
// cannot hold (not UTF-8): a propagator writes header text, and an entry
// that is not must not end the program.
func headerSafe(carrier map[string]string) map[string]string {
	for k, v := range carrier {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			delete(carrier, k)
		}
	}
	if len(carrier) == 0 {
		return nil
	}
	return carrier
}
