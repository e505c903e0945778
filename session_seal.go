//go:build cgo

package codemode

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// A sealed session is
//
//	"cms1" | flags (1 byte: 1 = sealed) | body | HMAC-SHA-256 tag (32 bytes)
//
// as a continuation is (see continuation.go), under keys derived from the
// host's SessionKey.Key (HKDF-SHA-256, infos "codemode session mac v1" and
// "codemode session seal v1"). The body is the JSON of sessionBody: the
// session's journal. A session is restored by replaying it: every run
// again, in order, with its seed and clock, every host call answered from
// its record, so no tool runs again and the realm is rebuilt as it was.
const (
	sessionMagic = "cms1"
	// MaxSealedSession is the largest sealed session RestoreSession reads.
	MaxSealedSession = 256 << 20
)

// modeCall is the journal's mode of a registered tool's call.
const modeCall = "call"

// sessionRun is one run a session kept.
type sessionRun struct {
	Mode      string     `json:"mode"` // "run", "execute" or "call"
	Code      string     `json:"code,omitempty"`
	Providers []Provider `json:"providers,omitempty"`
	Tool      string     `json:"tool,omitempty"` // call: the registered tool
	Args      string     `json:"args,omitempty"` // call: its arguments' JSON
	Seed      uint64     `json:"seed"`
	Clock     time.Time  `json:"clock"`
	Grants    []string   `json:"grants,omitempty"`
	// Calls are the run's host calls, in the order it made them, with
	// their answers.
	Calls []callRecord `json:"calls,omitempty"`
}

// sessionBody is what a sealed session holds.
type sessionBody struct {
	V         int          `json:"v"`
	ID        string       `json:"id"`
	Created   int64        `json:"created"`   // Unix seconds
	ExpiresNs int64        `json:"expiresNs"` // Unix nanoseconds
	Limits    Limits       `json:"limits"`
	Runs      []sessionRun `json:"runs"`
}

// sessionRecorder governs nothing: the governed side of a session's run
// under an executor without a Governance only records its calls.
var sessionRecorder Governance

// SessionKey is how a session is sealed and opened: Key authenticates it
// (HMAC-SHA-256 under a key derived from it; at least 32 bytes), Encrypt
// also seals its body (AES-256-GCM), and TTL bounds how long the sealed
// form is accepted (0: a day). Keep Key with the host: a sealed session
// holds the programs, the tool answers and the arguments of its calls.
type SessionKey struct {
	Key     []byte
	Encrypt bool
	TTL     time.Duration
}

// sessionTTL is a SessionKey's TTL when it gives none.
const sessionTTL = 24 * time.Hour

func (k SessionKey) keys() (contKeys, error) {
	if len(k.Key) < 32 {
		return contKeys{}, fmt.Errorf("codemode: a session key needs at least 32 bytes, not %d", len(k.Key))
	}
	mac, err := hkdf.Key(sha256.New, k.Key, nil, "codemode session mac v1", 32)
	if err != nil {
		return contKeys{}, err
	}
	seal, err := hkdf.Key(sha256.New, k.Key, nil, "codemode session seal v1", 32)
	if err != nil {
		return contKeys{}, err
	}
	return contKeys{mac: mac, seal: seal}, nil
}

// Seal returns the session's durable form: its journal (the programs it
// kept, their seeds and clocks, and every tool answer), authenticated with
// k's key, sealed when k.Encrypt is set, accepted until k.TTL from now.
// [Executor.RestoreSession] makes the session again from it, in this
// process or another, with no tool run again. Seal waits for a run in
// progress; the session goes on.
func (s *Session) Seal(k SessionKey) ([]byte, error) {
	keys, err := k.keys()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSessionClosed
	}
	return sealRuns(keys, k, s.id, s.ex.limits, s.journal)
}

// sealRuns seals a journal (see Seal).
func sealRuns(keys contKeys, k SessionKey, id string, limits Limits, runs []sessionRun) ([]byte, error) {
	ttl := k.TTL
	if ttl <= 0 {
		ttl = sessionTTL
	}
	now := time.Now()
	b := sessionBody{V: 1, ID: id, Created: now.Unix(), ExpiresNs: now.Add(ttl).UnixNano(), Limits: limits, Runs: runs}
	plain, err := json.Marshal(&b)
	if err != nil {
		return nil, err
	}
	return sealBytes(sessionMagic, keys, k.Encrypt, plain)
}

// Kept returns how many runs the session has kept (its journal's
// length), or -1 once it is closed.
func (s *Session) Kept() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return -1
	}
	return len(s.journal)
}

// ID returns the session's id: random, made by NewSession and kept by Seal
// and a restore. A paused run's continuation names it.
func (s *Session) ID() string { return s.id }

// Journal returns the runs the session has kept from the one at index
// from on (JSON: an array, [] for none), and how many it has kept in all.
// It is what Seal seals, for a host that keeps a session's durable form
// itself — a daemon's client holds its sessions' journals, and its key,
// and hands a journal to another daemon with [Executor.ReplaySession].
// It holds the programs, their tool answers and the arguments of their
// calls: treat it as the session itself.
func (s *Session) Journal(from int) (json.RawMessage, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.journal)
	if from < 0 || from > n {
		return nil, n, fmt.Errorf("codemode: the session has kept %d runs; there is no run %d", n, from)
	}
	b, err := json.Marshal(s.journal[from:])
	return b, n, err
}

// SealJournal seals a session's journal (Session.Journal's, whole) as
// [Session.Seal] does, for a host that keeps the journal itself: id is
// the session's, limits those its runs ran under. RestoreSession makes
// the session from it.
func SealJournal(k SessionKey, id string, limits Limits, journal json.RawMessage) ([]byte, error) {
	keys, err := k.keys()
	if err != nil {
		return nil, err
	}
	runs, err := decodeJournal(journal)
	if err != nil {
		return nil, err
	}
	return sealRuns(keys, k, id, limits, runs)
}

// OpenSealedSession authenticates a sealed session and returns what it
// holds (its id, the limits its runs ran under, its journal), as
// RestoreSession reads it, without replaying it: for a host that hands
// the journal on ([Executor.ReplaySession]). It refuses what
// RestoreSession refuses before anything runs, matching
// [ErrSessionRefused].
func OpenSealedSession(k SessionKey, sealed []byte) (id string, limits Limits, journal json.RawMessage, err error) {
	b, err := openSession(k, sealed, time.Now())
	if err != nil {
		return "", Limits{}, nil, err
	}
	journal, err = json.Marshal(b.Runs)
	return b.ID, b.Limits, journal, err
}

// decodeJournal reads a journal (Journal's form), refusing an unknown mode.
func decodeJournal(journal json.RawMessage) ([]sessionRun, error) {
	var runs []sessionRun
	if err := jsonv2.Unmarshal(journal, &runs, jsonv1.DefaultOptionsV1()); err != nil {
		return nil, sessionRefused("the journal is not a session's: " + err.Error())
	}
	for i, r := range runs {
		switch r.Mode {
		case modeRun, modeExecute, modeCall:
		default:
			return nil, sessionRefused(fmt.Sprintf("run %d has an unknown mode %q", i+1, r.Mode))
		}
	}
	return runs, nil
}

// ReplaySession makes a session from a journal ([Session.Journal]'s,
// whole) and the session's id, as RestoreSession does from a sealed one
// but with nothing authenticated: for a host that has the journal from a
// peer it trusts (a daemon, from its authenticated client). Its runs
// replay with every call answered from its record; a journal that no
// longer replays is an [*ExecError] of kind [KindDiverged].
func (e *Executor) ReplaySession(ctx context.Context, id string, journal json.RawMessage) (*Session, error) {
	if ctx == nil {
		return nil, nilContext(RunJSToolName)
	}
	runs, err := decodeJournal(journal)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = newContinuationID()
	}
	return e.replaySession(ctx, id, runs)
}

// openSession authenticates and decodes a sealed session.
func openSession(k SessionKey, sealed []byte, now time.Time) (*sessionBody, error) {
	keys, err := k.keys()
	if err != nil {
		return nil, err
	}
	if len(sealed) > MaxSealedSession {
		return nil, sessionRefused(fmt.Sprintf("it is %d bytes, over %d", len(sealed), MaxSealedSession))
	}
	plain, err := openBytes(sessionMagic, "sealed session", keys, sealed)
	if err != nil {
		return nil, sessionRefused(err.(*ContinuationError).Reason)
	}
	var b sessionBody
	if err := jsonv2.Unmarshal(plain, &b, jsonv1.DefaultOptionsV1()); err != nil {
		return nil, sessionRefused("its body is not a session: " + err.Error())
	}
	switch {
	case b.V != 1:
		return nil, sessionRefused(fmt.Sprintf("version %d is not one this executor reads", b.V))
	case !now.Before(time.Unix(0, b.ExpiresNs)):
		return nil, sessionRefused("it expired at " + time.Unix(0, b.ExpiresNs).UTC().Format(time.RFC3339Nano))
	}
	for i, r := range b.Runs {
		switch r.Mode {
		case modeRun, modeExecute, modeCall:
		default:
			return nil, sessionRefused(fmt.Sprintf("run %d has an unknown mode %q", i+1, r.Mode))
		}
	}
	return &b, nil
}

// ErrSessionRefused matches the error of a sealed session that
// RestoreSession refused before anything ran: tampered, truncated, made
// with another key, expired, or made under other limits.
var ErrSessionRefused = errors.New("codemode: sealed session refused")

func sessionRefused(why string) error { return fmt.Errorf("%w: %s", ErrSessionRefused, why) }

// RestoreSession makes a session again from what [Session.Seal] returned:
// its runs replay in order, each with its seed and clock, and every host
// call is answered from its record (none reaches a capability or a
// dispatch); a call that had not completed fails inside the program
// rather than run. The executor must have the limits the session ran
// under (memory, stack, payload and logs), and the capabilities and
// registered tools its runs called. A sealed session refused before
// anything runs matches [ErrSessionRefused]; one whose record no longer
// replays (the program called other tools, or ended otherwise) is an
// [*ExecError] of kind [KindDiverged], and no session is made.
func (e *Executor) RestoreSession(ctx context.Context, sealed []byte, k SessionKey) (*Session, error) {
	if ctx == nil {
		return nil, nilContext(RunJSToolName)
	}
	b, err := openSession(k, sealed, time.Now())
	if err != nil {
		return nil, err
	}
	l, m := b.Limits, e.limits
	if l.Memory != m.Memory || l.Stack != m.Stack || l.Payload != m.Payload || l.Logs != m.Logs {
		return nil, sessionRefused(fmt.Sprintf("it ran under memory %d, stack %d, payload %d and logs %d bytes; "+
			"this executor's are %d, %d, %d and %d", l.Memory, l.Stack, l.Payload, l.Logs, m.Memory, m.Stack, m.Payload, m.Logs))
	}
	return e.replaySession(ctx, b.ID, b.Runs)
}

// replaySession makes session id from its runs.
func (e *Executor) replaySession(ctx context.Context, id string, runs []sessionRun) (*Session, error) {
	s := &Session{ex: e, id: id}
	s.mu.Lock() // no eviction while it is made
	defer s.mu.Unlock()
	if err := e.sessions.add(s); err != nil {
		return nil, err
	}
	for i := range runs {
		if err := s.replay(ctx, &runs[i]); err != nil {
			e.sessions.remove(s)
			s.closed = true
			s.drop()
			var ee *ExecError
			if errors.As(err, &ee) && ee.Kind != KindDiverged && ee.Kind != KindInternal {
				err = &ExecError{Kind: KindDiverged, Name: ee.Name,
					Message: fmt.Sprintf("run %d of the session did not replay: %s", i+1, ee.Error())}
			}
			return nil, err
		}
	}
	return s, nil
}

// ungranted is a context without a Grant: the values but that of ctx.
type ungranted struct{ context.Context }

func (c ungranted) Value(key any) any {
	if _, ok := key.(grantKey); ok {
		return nil
	}
	return c.Context.Value(key)
}

// replay runs one run of a session's journal again.
func (s *Session) replay(ctx context.Context, r *sessionRun) error {
	g := newGovRun(&sessionRecorder, continuationBody{})
	g.replay, g.restoring = r.Calls, true
	ctx = WithDeterminism(ctx, Determinism{Seed: r.Seed, Clock: r.Clock})
	if r.Grants != nil {
		ctx = Grant(ctx, r.Grants...)
	} else {
		ctx = ungranted{ctx} // the run had every capability: not the caller's grant
	}
	switch r.Mode {
	case modeRun:
		_, err, _ := s.run(ctx, r.Code, g)
		return err
	case modeExecute:
		res, _ := s.ex.execute(ctx, Request{Code: r.Code, Providers: r.Providers}, g, s)
		if res.Err != nil {
			return res.Err
		}
		if res.Error != "" {
			return &ExecError{Kind: KindInvalidArgs, Name: ExecuteName, Reason: res.Error}
		}
		return nil
	}
	_, err := s.call(ctx, r.Tool, json.RawMessage(r.Args), g)
	return err
}

// Resume continues a run of this session that paused at a call needing a
// decision (see [Executor.Resume]): the paused run left the session as it
// was before it, and runs again in it from its start, its calls before
// the pause answered from the continuation. The continuation must be of
// this session, and the session must not have kept a run since the
// paused one began (it would replay over another state): both are
// refused before anything runs. dispatch serves an Execute program's
// provider tools.
func (s *Session) Resume(ctx context.Context, continuation []byte, d Decision, dispatch DispatchFunc) ExecuteResult {
	if ctx == nil {
		return refusedResult(nilContext(ExecuteName))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, r, ctx, refused := s.ex.resumption(ctx, continuation, d, s)
	if refused != nil {
		return *refused
	}
	if b.Mode == modeExecute {
		return s.ex.executeObserved(ctx, Request{Code: b.Code, Providers: b.Providers, Dispatch: dispatch}, r, s)
	}
	return runAsExecuteResult(s.runObserved(ctx, b.Code, r))
}
