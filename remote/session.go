package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/codemode-go/codemode"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// Session is a codemode.Session on the daemons: each program sees what the
// earlier ones declared at their top level and put on globalThis, and a
// program that fails changes nothing (see codemode.Session). The daemon
// that ran the last program keeps the session's sandbox; the client keeps
// its journal (each kept program, its tool answers, seeds and clocks,
// handed back with its result), and the key that seals it, which never
// leaves the client.
//
// A program that reaches a daemon without the session — another daemon of
// a fleet, one that restarted, one whose session ended idle — carries the
// journal, and that daemon makes the session again by replaying it (no
// tool is called again) before it runs the program. So a session moves to
// another daemon when its daemon is gone, or refuses programs for memory
// (the client tries the next one). Across a balanced fleet each program
// may land on another daemon and replay there: correct, and as slow as
// the journal is long; pin a session's client to one daemon for speed.
//
// A session's programs take turns. A paused program of a session does not
// resume on the daemon (codemode.Session.Resume runs in process).
type Session struct {
	c       *Client
	id      string
	mu      sync.Mutex // one program at a time
	journal []json.RawMessage
	limits  codemode.Limits // what its programs ran under, as the daemon said
}

// NewSession opens a session on the client's daemons. Nothing is sent
// until its first program.
func (c *Client) NewSession() *Session {
	var b [16]byte
	rand.Read(b[:])
	return &Session{c: c, id: hex.EncodeToString(b[:])}
}

// ID returns the session's id: random, chosen by the client.
func (s *Session) ID() string { return s.id }

// Run runs a script in the session, as Client.Run runs one afresh.
func (s *Session) Run(ctx context.Context, script string) (*codemode.Result, error) {
	if ctx == nil {
		return nil, failed(codemode.RunJSToolName, codemode.ErrNilContext).Err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.c.runStart(script)
	start.Session = s.ref()
	r, _, err := s.c.run(ctx, start, s)
	return r, err
}

// Execute runs a request in the session, as Client.Execute runs one
// afresh (its providers are the request's; RetainHandles is refused).
func (s *Session) Execute(ctx context.Context, req codemode.Request) codemode.ExecuteResult {
	if ctx == nil {
		return failed(codemode.ExecuteName, codemode.ErrNilContext)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.c.executeStart(req)
	start.Session = s.ref()
	start.Capabilities = s.c.pbCapabilities() // its Run programs' executor: one sandbox

	return s.c.execute(ctx, start, req.Dispatch, s)
}

// ref names the session at the client's point.
func (s *Session) ref() *pb.SessionRef {
	return &pb.SessionRef{Id: s.id, Runs: int64(len(s.journal))}
}

// journalBytes is the journal as codemode.Session.Journal writes it.
func (s *Session) journalBytes() []byte {
	b, err := json.Marshal(s.journal)
	if err != nil || len(b) == 0 {
		return []byte("[]")
	}
	return b
}

// kept takes a result's kept program into the journal.
func (s *Session) kept(res *pb.Result) {
	if l := res.GetLimits(); l != nil {
		s.limits = codemode.Limits{Memory: int(l.Memory), Stack: int(l.Stack), Payload: int(l.Payload), Logs: int(l.Logs)}
	}
	if len(res.JournalEntry) == 0 {
		return
	}
	var runs []json.RawMessage
	if json.Unmarshal(res.JournalEntry, &runs) == nil {
		s.journal = append(s.journal, runs...)
	}
}

// Seal returns the session's durable form, sealed with k on the client
// (codemode.SealJournal): Client.RestoreSession continues it, on any
// daemon, in this process or another.
func (s *Session) Seal(k codemode.SessionKey) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return codemode.SealJournal(k, s.id, s.limits, s.journalBytes())
}

// RestoreSession continues a sealed session (Session.Seal's, or a
// codemode.Session's): it is opened here, with k, and its journal goes to
// the daemon with its next program. A sealed session refused (tampered,
// another key, expired) matches codemode.ErrSessionRefused.
func (c *Client) RestoreSession(sealed []byte, k codemode.SessionKey) (*Session, error) {
	id, limits, journal, err := codemode.OpenSealedSession(k, sealed)
	if err != nil {
		return nil, err
	}
	var runs []json.RawMessage
	if err := json.Unmarshal(journal, &runs); err != nil {
		return nil, fmt.Errorf("remote: the sealed session's journal: %w", err)
	}
	return &Session{c: c, id: id, journal: runs, limits: limits}, nil
}
