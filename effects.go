//go:build cgo

package codemode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// effects.go: the effects ledger. Every run records the host calls its
// program made, in order, so that whoever reads its outcome (a Go caller,
// a model deciding whether to retry, an operator reading a batch summary)
// can tell "no tool ran" from "store.put completed before the timeout".
// A call is recorded as the program makes it and again as its handler
// returns; what the run's end finds still in a handler is "running".

// Effect is what a tool does to the world, as its host declares it in its
// [ToolPolicy]: a call to a read can be repeated, a call to a write may
// repeat what it did.
type Effect string

// The effects a [ToolPolicy] may declare.
const (
	// EffectWrite: the tool may change the world. The default for every
	// tool the host does not mark: a retry decision must not assume a
	// tool harmless that nobody said was.
	EffectWrite Effect = "write"
	// EffectRead: the tool only reads; repeating it changes nothing.
	EffectRead Effect = "read"
)

// The outcomes of a [ToolEffect] besides those of [ToolCallEnd] ("ok",
// "error", "timeout", "rejected", "budget", "replayed", "paused").
const (
	// OutcomeRunning: the handler had not returned when the run ended; it
	// may still complete (a write it makes may take effect).
	OutcomeRunning = "running"
	// OutcomeNotStarted: the call waited for a free handler (past the
	// in-flight bound) and the run ended first; its tool never ran.
	OutcomeNotStarted = "not_started"
	// OutcomeInvalidArgs: the call's arguments were refused (its schema, a
	// typed capability's input) before its tool ran; the program caught a
	// TypeError.
	OutcomeInvalidArgs = "invalid_args"
)

// The bounds of a ledger: the first LedgerHead calls and the last
// LedgerTail are kept; [Effects].Omitted counts those between.
const (
	LedgerHead = 32
	LedgerTail = 32
)

// ToolEffect is one host call of a run, as the ledger keeps it.
type ToolEffect struct {
	// Seq is the call's place among the run's calls, from 0 (as
	// [ToolCallInfo].Seq).
	Seq int `json:"seq"`
	// Tool is the tool's policy name: a capability's name, a provider
	// tool's "provider.tool", "fetch" for the network.
	Tool string `json:"tool"`
	// Effect is the tool's declared effect (EffectWrite unless marked).
	Effect Effect `json:"effect"`
	// Outcome is how the call ended: "ok" (its handler returned an
	// answer), "error" (its handler failed, or a provider answered
	// {"error": …}: the tool ran), OutcomeRunning, OutcomeNotStarted,
	// OutcomeInvalidArgs, or governance's: "timeout" (its per-call timeout: the handler was
	// left running), "rejected", "budget" (the tool did not run),
	// "replayed" (a resumed run's answer from the continuation: the tool
	// ran before the pause), "paused".
	Outcome string `json:"outcome"`
	// Elapsed is the time from the call to its end, or to the run's end
	// for a call still running.
	Elapsed time.Duration `json:"-"`
}

// MarshalJSON writes the call with its elapsed time in milliseconds
// ("ms"), to the microsecond.
func (t ToolEffect) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 96)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(t.Seq), 10)
	b = append(b, `,"tool":`...)
	b = appendJSONString(b, t.Tool)
	b = append(b, `,"effect":`...)
	b = appendJSONString(b, string(t.Effect))
	b = append(b, `,"outcome":`...)
	b = appendJSONString(b, t.Outcome)
	b = append(b, `,"ms":`...)
	b = strconv.AppendFloat(b, float64(t.Elapsed.Microseconds())/1000, 'f', -1, 64)
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *ToolEffect) UnmarshalJSON(data []byte) error {
	var w struct {
		Seq     int     `json:"seq"`
		Tool    string  `json:"tool"`
		Effect  Effect  `json:"effect"`
		Outcome string  `json:"outcome"`
		MS      float64 `json:"ms"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*t = ToolEffect{Seq: w.Seq, Tool: w.Tool, Effect: w.Effect, Outcome: w.Outcome,
		Elapsed: time.Duration(w.MS * float64(time.Millisecond))}
	return nil
}

// started says whether the call reached its tool (now or, replayed,
// before a pause).
func (t *ToolEffect) started() bool {
	switch t.Outcome {
	case "ok", "error", "timeout", "replayed", OutcomeRunning:
		return true
	}
	return false
}

// Effects is a run's ledger: which host calls its program made, in order,
// and how each ended, bounded in size. A nil *Effects is a run that made
// no call (its methods take it so). Run, Execute, a session's run and Resume fill it in their
// result (next to the error of a failed run); CodeModeTool, `codemode`
// and the daemon show it as [Effects.MarshalJSON] writes it.
type Effects struct {
	// Calls are the first LedgerHead calls and the last LedgerTail, in
	// order; Omitted counts those between them.
	Calls   []ToolEffect
	Omitted int
	// Started counts the calls that reached their tool (OK, Failed and
	// Running ones, and replayed ones: they ran before a pause);
	// Completed those whose handler returned (OK or Failed).
	Started, Completed int
	// WritesCompleted counts the calls of write tools whose handler
	// returned an answer, WritesFailed those whose handler failed (it may
	// have written before it did: the tool's to say), WritesRunning those
	// still in their handler at the run's end (or left there by their
	// per-call timeout); all over every call, omitted ones included.
	WritesCompleted, WritesFailed, WritesRunning int
	// Written names the write tools with a completed call, FailedWrites
	// those with a failed one, each once, in the order of their first
	// (at most MaxWritten each; the counts above are exact).
	Written, FailedWrites []string
	// End is how the run ended: "" with a value (or a pause), else its
	// error's kind.
	End ErrorKind
}

// MaxWritten bounds [Effects].Written.
const MaxWritten = 8

// Wrote reports whether a write may have taken effect: a write tool's
// call completed, failed or did not return.
func (e *Effects) Wrote() bool {
	return e != nil && (e.WritesCompleted > 0 || e.WritesFailed > 0 || e.WritesRunning > 0)
}

// Summary says in a sentence what the run did to the world, for the model
// and the log: "no tool ran", "only reads ran", or which writes completed,
// failed or did not return, and, when the run was stopped (its deadline,
// its memory limit, its caller), before what: e.g. "store.put completed
// before the timeout".
func (e *Effects) Summary() string {
	if e == nil || e.Started == 0 {
		return "no tool ran"
	}
	if !e.Wrote() {
		return "only reads ran"
	}
	var parts []string
	if e.WritesCompleted > 0 {
		parts = append(parts, nameList(e.Written, e.WritesCompleted)+" completed")
	}
	if e.WritesFailed > 0 {
		parts = append(parts, nameList(e.FailedWrites, e.WritesFailed)+" failed (it may have written first)")
	}
	if e.WritesRunning > 0 {
		var running []string
		for i := range e.Calls {
			if c := &e.Calls[i]; c.Effect == EffectWrite && (c.Outcome == OutcomeRunning || c.Outcome == "timeout") &&
				!containsString(running, c.Tool) && len(running) < MaxWritten {
				running = append(running, c.Tool)
			}
		}
		parts = append(parts, nameList(running, e.WritesRunning)+" did not return (it may have taken effect)")
	}
	s := strings.Join(parts, "; ")
	if end := endName(e.End); end != "" {
		s += " before " + end
	}
	return s
}

// nameList is "a", "a and b", "a, b and c": the tools of n calls (names
// is empty only when none of them is kept: then "n write calls").
func nameList(names []string, n int) string {
	if len(names) == 0 {
		return fmt.Sprintf("%d write calls", n)
	}
	s := names[0]
	for i := 1; i < len(names); i++ {
		if i == len(names)-1 {
			s += " and " + names[i]
		} else {
			s += ", " + names[i]
		}
	}
	return s
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// endName is how a summary names what stopped a run that failed with
// kind, or "" when the program ended by itself (it threw, it stalled).
func endName(kind ErrorKind) string {
	switch kind {
	case KindTimeout:
		return "the timeout"
	case KindMemoryExceeded, KindMemoryBudget:
		return "the memory limit"
	case KindInternal:
		return "the run was stopped"
	}
	return ""
}

// effectsJSON is the shape MarshalJSON writes.
type effectsJSON struct {
	Summary   string       `json:"summary"`
	Started   int          `json:"started"`
	Completed int          `json:"completed"`
	Calls     []ToolEffect `json:"calls,omitempty"`
	Omitted   int          `json:"omitted,omitempty"`
}

// MarshalJSON writes the ledger as the model reads it: its summary, the
// counts, the calls kept and how many were left out, e.g.
//
//	{"summary":"store.put completed before the timeout","started":2,"completed":2,
//	 "calls":[{"seq":0,"tool":"store.get","effect":"read","outcome":"ok","ms":0.412},
//	          {"seq":1,"tool":"store.put","effect":"write","outcome":"ok","ms":1.07}]}
func (e *Effects) MarshalJSON() ([]byte, error) {
	if e == nil {
		e = &Effects{}
	}
	return marshal(effectsJSON{Summary: e.Summary(), Started: e.Started, Completed: e.Completed, Calls: e.Calls,
		Omitted: e.Omitted})
}

// ledger records a run's calls as they are made and end (hostRun's).
// Only the run's goroutine touches it: a call is begun as the program
// makes it, ended as the run takes its completion (or, for a completion
// the run did not take, at its end), and the snapshot is taken once the
// host side is closed, so a call costs no lock and no cache line shared
// with its handler.
type ledger struct {
	head []ledgerEntry            // the first LedgerHead calls, by seq
	tail *[LedgerTail]ledgerEntry // later calls, by seq % LedgerTail (made past the head)
	n    int                      // calls recorded
	base monoTime                 // the first call's time: entries keep theirs as an offset
	// based says base is set.
	based bool
	open  []openCall // calls begun and not ended
	// The counts so far (Effects' fields of the same names).
	started, completed, writesCompleted, writesFailed int
	// names are the tools', effects' and outcomes' names the entries
	// point to, each once: the entries hold no pointer, so the garbage
	// collector neither scans them nor pays a write barrier per call.
	names []string
	// index finds a name past the first scanNames (a program calling
	// store[`t${i}`]() names as many tools as it likes).
	index map[string]int32
	// flags says, per name, whether it is in written or in failedWrites.
	flags []uint8
	// The names Written and FailedWrites collect, before the snapshot.
	written, failedWrites nameSet
	// Room for a run's first calls, so that a run of a few calls
	// allocates nothing for its ledger but its snapshot.
	headBuf  [2]ledgerEntry
	openBuf  [2]openCall
	namesBuf [4]string
	flagsBuf [4]uint8
}

// The flags of a name.
const (
	flagWritten uint8 = 1 << iota
	flagFailedWrite
)

// nameSet is up to MaxWritten distinct names, the first two in place.
type nameSet struct {
	first [2]string
	more  []string
	n     int
}

// add adds name, which it does not hold, up to MaxWritten names.
func (s *nameSet) add(name string) {
	if s.n == MaxWritten {
		return
	}
	if s.n < len(s.first) {
		s.first[s.n] = name
	} else {
		s.more = append(s.more, name)
	}
	s.n++
}

// appendTo appends the names to dst.
func (s *nameSet) appendTo(dst []string) []string {
	return append(append(dst, s.first[:min(s.n, len(s.first))]...), s.more...)
}

// ledgerEntry is a kept call, its names as indexes into the ledger's
// names, and when it was made (after the ledger's base).
type ledgerEntry struct {
	at, elapsed           time.Duration
	seq                   int // -1: no call
	tool, effect, outcome int32
}

// scanNames is how many names the ledger finds by a scan: a run's calls
// name a few tools; past these, by its index.
const scanNames = 16

// name is s's index in the ledger's names, adding it if new.
func (l *ledger) name(s string) int32 {
	if l.index != nil {
		if i, ok := l.index[s]; ok {
			return i
		}
	} else {
		for i, n := range l.names {
			if n == s {
				return int32(i)
			}
		}
	}
	if l.names == nil {
		l.names, l.flags = l.namesBuf[:0], l.flagsBuf[:0]
	}
	l.names = append(l.names, s)
	l.flags = append(l.flags, 0)
	i := int32(len(l.names) - 1)
	switch {
	case l.index != nil:
		l.index[s] = i
	case len(l.names) > scanNames:
		l.index = make(map[string]int32, 2*len(l.names))
		for j, n := range l.names {
			l.index[n] = int32(j)
		}
	}
	return i
}

// effect is entry r's call as a ToolEffect.
func (l *ledger) effect(r *ledgerEntry) ToolEffect {
	return ToolEffect{Seq: r.seq, Tool: l.names[r.tool], Effect: Effect(l.names[r.effect]), Outcome: l.names[r.outcome],
		Elapsed: r.elapsed}
}

// since is t's offset from the ledger's base, which the first call sets.
func (l *ledger) since(t monoTime) time.Duration {
	if !l.based {
		l.base, l.based = t, true
	}
	return time.Duration(t - l.base)
}

// openCall is a call begun and not ended: what the snapshot needs of it
// once the run has ended.
type openCall struct {
	seq      int
	write    bool
	governed bool // its handler runs only once governance lets it
}

// close removes call seq from the open calls.
func (l *ledger) close(seq int) {
	for i := range l.open {
		if l.open[i].seq == seq {
			l.open[i] = l.open[len(l.open)-1]
			l.open = l.open[:len(l.open)-1]
			return
		}
	}
}

// begin records a call the program made.
func (l *ledger) begin(seq int, tool string, effect Effect, governed bool, at monoTime) {
	l.put(ledgerEntry{at: l.since(at), seq: seq, tool: l.name(tool), effect: l.name(string(effect)),
		outcome: l.name(OutcomeNotStarted)})
	if l.open == nil {
		l.open = l.openBuf[:0]
	}
	l.open = append(l.open, openCall{seq: seq, write: effect == EffectWrite, governed: governed})
}

// record records a call made and ended at once (a synchronous call with
// no governance): its outcome, from at to ended.
func (l *ledger) record(seq int, tool string, effect Effect, outcome string, at, ended monoTime) {
	t := l.name(tool)
	l.put(ledgerEntry{at: l.since(at), elapsed: time.Duration(ended - at), seq: seq, tool: t,
		effect: l.name(string(effect)), outcome: l.name(outcome)})
	l.count(t, effect == EffectWrite, outcome)
}

// put keeps a call's entry where its seq goes.
func (l *ledger) put(r ledgerEntry) {
	seq := r.seq
	switch {
	case seq < LedgerHead:
		if l.head == nil {
			l.head = l.headBuf[:0]
		}
		for len(l.head) <= seq {
			l.head = append(l.head, ledgerEntry{seq: -1})
		}
		l.head[seq] = r
	default:
		if l.tail == nil {
			l.tail = new([LedgerTail]ledgerEntry)
		}
		l.tail[seq%LedgerTail] = r
	}
	l.n = max(l.n, seq+1)
}

// entry returns the kept record of call seq, or nil.
func (l *ledger) entry(seq int) *ledgerEntry {
	if seq < LedgerHead {
		if seq < len(l.head) && l.head[seq].seq == seq {
			return &l.head[seq]
		}
		return nil
	}
	if l.tail != nil {
		if r := &l.tail[seq%LedgerTail]; r.seq == seq { // a slot never used holds seq 0, below the tail's
			return r
		}
	}
	return nil
}

// end records how call seq ended, at the time its handler returned: "ok"
// or "error" for a handler that returned, else governance's note
// ("timeout" leaves the call open: its handler runs on; "replayed" ran
// before a pause; the others never reached their tool).
func (l *ledger) end(seq int, tool string, write bool, outcome string, at monoTime) {
	if r := l.entry(seq); r != nil {
		r.outcome, r.elapsed = l.name(outcome), l.since(at)-r.at
	}
	switch outcome {
	case "timeout":
		for i := range l.open {
			if l.open[i].seq == seq {
				l.open[i].governed = false // it entered its handler: running
			}
		}
		return
	}
	l.close(seq)
	l.count(l.name(tool), write, outcome)
}

// count counts a call that ended: one that reached its tool ("ok",
// "error", "replayed") is started and completed, a write's name kept;
// one that never did (refused) counts for nothing.
func (l *ledger) count(tool int32, write bool, outcome string) {
	switch outcome {
	case "ok", "error", "replayed":
	default:
		return
	}
	l.started++
	l.completed++
	switch {
	case !write:
	case outcome == "error":
		l.writesFailed++
		if l.flags[tool]&flagFailedWrite == 0 {
			l.flags[tool] |= flagFailedWrite
			l.failedWrites.add(l.names[tool])
		}
	default:
		l.writesCompleted++
		if l.flags[tool]&flagWritten == 0 {
			l.flags[tool] |= flagWritten
			l.written.add(l.names[tool])
		}
	}
}

// snapshot ends the ledger at the run's end. A call still open is running
// (its elapsed time counted to now), unless it never reached its handler:
// it waited for a place in flight (queued), or for governance that had not
// let it run (entered says which governed calls did).
func (l *ledger) snapshot(now monoTime, queued []int, entered []int) *Effects {
	if l.n == 0 {
		return nil
	}
	kept := min(len(l.head), LedgerHead)
	if l.n > LedgerHead {
		kept += min(l.n-LedgerHead, LedgerTail)
	}
	// One allocation for a run of a few calls: the ledger, its calls and
	// its names.
	box := new(effectsBox)
	out := &box.e
	out.Started, out.Completed, out.WritesCompleted, out.WritesFailed = l.started, l.completed, l.writesCompleted, l.writesFailed
	for _, c := range l.open {
		if slices.Contains(queued, c.seq) || c.governed && !slices.Contains(entered, c.seq) {
			continue // never ran: not_started
		}
		out.Started++
		if c.write {
			out.WritesRunning++
		}
		if r := l.entry(c.seq); r != nil {
			if l.names[r.outcome] == OutcomeNotStarted {
				r.outcome = l.name(OutcomeRunning)
			}
			if l.names[r.outcome] == OutcomeRunning {
				r.elapsed = l.since(now) - r.at
			}
		}
	}
	if kept <= len(box.calls) {
		out.Calls = box.calls[:0:kept]
	} else {
		out.Calls = make([]ToolEffect, 0, kept)
	}
	for i := range l.head {
		if l.head[i].seq >= 0 {
			out.Calls = append(out.Calls, l.effect(&l.head[i]))
		}
	}
	for seq := max(LedgerHead, l.n-LedgerTail); seq < l.n; seq++ {
		if r := l.entry(seq); r != nil {
			out.Calls = append(out.Calls, l.effect(r))
		}
	}
	out.Omitted = l.n - len(out.Calls)
	nw, nf := l.written.n, l.failedWrites.n
	names := box.names[:0:len(box.names)]
	if nw+nf > len(box.names) {
		names = make([]string, 0, nw+nf)
	}
	names = l.failedWrites.appendTo(l.written.appendTo(names))
	if nw > 0 {
		out.Written = names[:nw:nw]
	}
	if nf > 0 {
		out.FailedWrites = names[nw : nw+nf : nw+nf]
	}
	return out
}

// effectsBox holds a snapshot and, for a run of a few calls, its calls
// and names.
type effectsBox struct {
	e     Effects
	calls [2]ToolEffect
	names [2]string
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	if plainASCII(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := marshal(s)
	return append(b, q...)
}

// effectOf is the declared effect of a tool by its policy name: its
// policy's, else the "*" policy's, else EffectWrite.
func (e *Executor) effectOf(name string) Effect {
	if e.effects != nil {
		if f, ok := e.effects[name]; ok {
			return f
		}
		if f, ok := e.effects["*"]; ok {
			return f
		}
	}
	return EffectWrite
}

// fetchEffect is the effect of a fetch with args: its policy's when the
// host marked "fetch", else by the request's method (RFC 9110's safe
// methods read, every other writes).
func (e *Executor) fetchEffect(args []byte) Effect {
	if f, ok := e.effects["fetch"]; ok {
		return f
	}
	var r struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(args, &r) == nil {
		switch strings.ToUpper(r.Method) {
		case "GET", "HEAD", "OPTIONS", "TRACE":
			return EffectRead
		}
	}
	return EffectWrite
}

// track records a call in the ledger as the program makes it, and
// returns its name there and whether its tool writes.
func (h *hostRun) track(cap int, provider, tool string, args []byte, seq int) (name string, write bool) {
	name, f := h.effectName(cap, provider, tool, args)
	h.led.begin(seq, name, f, h.gov != nil, monoNow())
	return name, f == EffectWrite
}

// effectName is a call's name in the ledger (its policy name; "fetch" for
// the network) and its tool's effect.
func (h *hostRun) effectName(cap int, provider, tool string, args []byte) (string, Effect) {
	switch {
	case cap < 0:
		var names *toolNames
		if h.run != nil && h.run.prog != nil {
			names = h.run.prog.toolNames
		}
		name := names.join(provider, tool)
		return name, h.ex.effectOf(name)
	case h.caps.caps[cap].Name == fetchCapabilityName:
		return "fetch", h.ex.fetchEffect(args)
	default:
		name := h.caps.caps[cap].Name
		return name, h.ex.effectOf(name)
	}
}

// outcome is how the ledger records a call that ended with d.
func (d *completion) outcome() string {
	switch d.why {
	case noteNone, noteApproved, noteEdited:
		if d.badArgs {
			return OutcomeInvalidArgs
		}
		if d.failed {
			return "error"
		}
		if d.str && len(d.result) > 0 { // a provider's answer: {"error": …} is its failure
			if _, failed := envelopeFailure(d.result[:len(d.result)-1]); failed {
				return "error"
			}
		}
		return "ok"
	}
	return d.why.String()
}

// outcomeOf is the ledger's outcome of a sync call that returned.
func outcomeOf(failed, badArgs bool) string {
	switch {
	case badArgs:
		return OutcomeInvalidArgs
	case failed:
		return "error"
	}
	return "ok"
}

// toolNames joins provider tools' policy names ("provider.tool") once per
// provider set and tool, so that a call's ledger entry costs no
// allocation: a copy-on-write map read without a lock, bounded.
type toolNames struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]string] // "provider\x00tool" -> "provider.tool"
}

// maxToolNames bounds a provider set's joined names; past it, a name is
// joined at each call.
const maxToolNames = 1024

// join returns "provider.tool" (t may be nil: joined every time).
func (t *toolNames) join(provider, tool string) string {
	var kb [96]byte
	k := append(append(append(kb[:0], provider...), 0), tool...)
	if t != nil {
		if m := t.m.Load(); m != nil {
			if name, ok := (*m)[string(k)]; ok { // no copy: looked up as bytes
				return name
			}
		}
	}
	name := provider + "." + tool
	if t == nil {
		return name
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	if old != nil && len(*old) >= maxToolNames {
		return name
	}
	m := make(map[string]string, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[string(k)] = name
	t.m.Store(&m)
	return name
}

func lenOf(m *map[string]string) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// effects ends the run's ledger once its host side is closed: the
// completions the run did not take are ended first (their handlers
// returned before the run ended).
func (h *hostRun) effects(now monoTime) *Effects {
	h.mu.Lock()
	late, queued, entered := h.late, h.unstarted, h.govEntered
	h.late = nil
	h.mu.Unlock()
	for i := range late {
		h.logEnd(&late[i])
	}
	return h.led.snapshot(now, queued, entered)
}

// logEnd records a completion the run takes in the ledger, once.
func (h *hostRun) logEnd(d *completion) {
	if !d.logged {
		d.logged = true
		h.led.end(d.seq, d.led, d.write, d.outcome(), d.endedAt)
	}
}
