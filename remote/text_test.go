package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// jsTexts are hostile texts as JavaScript makes them: a lone surrogate
// leaves the engine in its three-byte (WTF-8) form, which is not UTF-8.
var jsTexts = map[string]string{
	"lone high surrogate": `"\uD800"`,
	"lone low surrogate":  `"\uDC00"`,
	"surrogates reversed": `"a\uDC00\uD800b"`,
	"a surrogate pair":    `"\uD83D\uDE00"`,
	"NUL":                 `"a\u0000b"`,
	"U+FFFF and U+FFFE":   `"\uFFFF\uFFFE"`,
	"line separators":     `"\u2028\u2029\r\n"`,
	"10 KB":               `"\u00e9".repeat(5 * 1024) + "\uD800"`,
}

// goTexts are hostile texts as a host's Go strings hold them.
var goTexts = map[string]string{
	"not UTF-8":           "a\xffb\xfe",
	"a surrogate's bytes": "\xed\xa0\x80",
	"a truncated rune":    "\xe2\x82",
	"NUL":                 "a\x00b",
	"U+FFFF":              "\uffff",
	"10 KB":               strings.Repeat("\u00e9", 5*1024) + "\xed\xb0\x80",
}

// call is a dispatch call as the host saw it.
type call struct{ Provider, Tool, Args string }

// calls records a host's dispatch calls and answers each with its own
// text: the envelope's result is the arguments, and a tool named fail*
// answers with answer as its error, one named raw* with answer as its
// value, raw in a JSON string.
type calls struct {
	answer string
	mu     sync.Mutex
	seen   []call
}

func (c *calls) dispatch(_ context.Context, provider, tool, args string) (string, error) {
	c.mu.Lock()
	c.seen = append(c.seen, call{provider, tool, args})
	c.mu.Unlock()
	switch {
	case strings.HasPrefix(tool, "fail"):
		return `{"error":"` + c.answer + `"}`, nil
	case strings.HasPrefix(tool, "raw"):
		return `{"result":"` + c.answer + `"}`, nil
	case strings.HasPrefix(tool, "gofail"):
		return "", errors.New(c.answer)
	}
	return `{"result":` + args + `}`, nil
}

func (c *calls) all() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

// executed is an Execute outcome, every byte of it but the stats, and the
// dispatch calls that made it.
type executed struct {
	Result, Error string
	Logs          []string
	Err           *errOutcome
	Paused        *pausedOutcome
	Calls         []call
}

type pausedOutcome struct{ Tool, Args string }

// errOutcome is an error as a caller sees it: its kind, text, JSON for a
// model, and what errors.Is matches.
type errOutcome struct {
	Kind      codemode.ErrorKind
	Error     string
	LLMJSON   string
	Is        []string
	ExecError *codemode.ExecError // its fields, when it is one (its cause aside)
}

// targets are the errors an outcome is matched against with errors.Is.
var targets = []struct {
	name string
	err  error
}{
	{"context.Canceled", context.Canceled}, {"context.DeadlineExceeded", context.DeadlineExceeded},
	{"ErrTimeout", codemode.ErrTimeout}, {"ErrClosed", codemode.ErrClosed}, {"ErrBusy", codemode.ErrBusy},
	{"ErrMemoryBudget", codemode.ErrMemoryBudget}, {"ErrRetainedClosed", codemode.ErrRetainedClosed},
	{"ErrNilContext", codemode.ErrNilContext}, {"ErrContinuation", codemode.ErrContinuation},
	{"ErrContinuationExpired", codemode.ErrContinuationExpired}, {"ErrInvalidDecision", codemode.ErrInvalidDecision},
	{"ErrInvalidLimits", codemode.ErrInvalidLimits},
}

func outcomeOf(err error) *errOutcome {
	if err == nil {
		return nil
	}
	o := &errOutcome{Error: err.Error()}
	if ee, ok := errors.AsType[*codemode.ExecError](err); ok {
		o.Kind, o.LLMJSON = ee.Kind, ee.LLMJSON()
		o.ExecError = &codemode.ExecError{Kind: ee.Kind, Name: ee.Name, Message: ee.Message, Reason: ee.Reason,
			Capability: ee.Capability, DeadlineMS: ee.DeadlineMS, LimitBytes: ee.LimitBytes}
	}
	for _, t := range targets {
		if errors.Is(err, t.err) {
			o.Is = append(o.Is, t.name)
		}
	}
	return o
}

func executedOf(res codemode.ExecuteResult, c *calls) executed {
	o := executed{Result: string(res.Result), Error: res.Error, Logs: res.Logs}
	if res.Err != nil {
		o.Err = outcomeOf(res.Err)
	}
	if res.Paused != nil {
		o.Paused = &pausedOutcome{string(res.Paused.Tool), string(res.Paused.Args)}
	}
	if c != nil {
		o.Calls = c.all()
	}
	if res.Retained != nil {
		res.Retained.Close()
	}
	return o
}

// ran is a Run outcome, every byte of it but the stats.
type ran struct {
	Value string
	Logs  []string
	Err   *errOutcome
}

func ranOf(res *codemode.Result, err error) ran {
	o := ran{Err: outcomeOf(err)}
	if res != nil {
		o.Value, o.Logs = string(res.Value), res.Logs
	}
	return o
}

// resumer is what resumes a paused program: the Executor and the client.
type resumer interface {
	codemode.Runner
	Resume(ctx context.Context, continuation []byte, d codemode.Decision, dispatch codemode.DispatchFunc) codemode.ExecuteResult
}

// twins are an executor and a daemon's client configured alike.
type twins struct{ local, remote resumer }

// both is each twin with its name.
func (tw twins) both() []struct {
	name string
	r    resumer
} {
	return []struct {
		name string
		r    resumer
	}{{"in process", tw.local}, {"through the daemon", tw.remote}}
}

// twinOptions configure a pair of twins.
type twinOptions struct {
	limits codemode.Limits
	caps   []codemode.Capability
	gov    *codemode.Governance
	budget int64 // the memory budget (default 512 MiB)
}

// newTwins makes an executor and a client of a daemon of its own, with
// the same limits, capabilities, governance and memory budget (each its
// own budget of that size).
func newTwins(t testing.TB, o twinOptions) twins {
	t.Helper()
	budget := func() *codemode.MemoryBudget {
		b, err := codemode.NewMemoryBudget(cmpOr(o.budget, 512<<20))
		require.NoError(t, err)
		return b
	}
	opts := []codemode.Option{codemode.WithLimits(o.limits), codemode.WithMemoryBudget(budget()), codemode.WithMemoryWait(0)}
	var copts []remote.Option
	if o.limits != (codemode.Limits{}) {
		copts = append(copts, remote.WithLimits(o.limits))
	}
	for _, c := range o.caps {
		opts = append(opts, codemode.WithCapability(c))
		copts = append(copts, remote.WithCapability(c))
	}
	if o.gov != nil {
		opts = append(opts, codemode.WithGovernance(*o.gov))
		copts = append(copts, remote.WithGovernance(*o.gov))
	}
	local, err := codemode.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { local.Close() })
	addr, _ := daemon(t, remote.ServerOptions{Max: o.limits, MemoryBudget: budget()})
	return twins{local: local, remote: dial(t, addr, copts...)}
}

func cmpOr(v, d int64) int64 {
	if v == 0 {
		return d
	}
	return v
}

// TestHostileTextSameAsInProcess: texts that are not UTF-8 (a lone
// surrogate as the engine writes it, the bytes a host's Go string may
// hold), NUL, U+FFFF and 10 KB of text, in every place text crosses the
// daemon's wire (tool and provider names, arguments, answers, failures,
// logs, results, error texts, declarations, a paused call, a retained
// sandbox's answers, the unary Standalone path): through Execute and Run
// the outcome, and every dispatch call, is the same byte for byte in
// process and through the daemon. Once, such text ended the program with
// "grpc: error while marshaling: string field contains invalid UTF-8".
func TestHostileTextSameAsInProcess(t *testing.T) {
	ctx := context.Background()
	key := []byte(strings.Repeat("k", 32))
	for name, lit := range jsTexts {
		t.Run("js "+name, func(t *testing.T) {
			t.Parallel()
			// A capability that echoes its argument object, and one that
			// fails with the text it is given.
			echo := codemode.Capability{Name: "echo", Unchecked: true, Func: func(_ context.Context, args json.RawMessage) (any, error) {
				return args, nil
			}}
			fail := codemode.Capability{Name: "fail", Unchecked: true, Func: func(_ context.Context, args json.RawMessage) (any, error) {
				var a struct{ T string }
				json.Unmarshal(args, &a)
				return nil, errors.New(a.T)
			}}
			tw := newTwins(t, twinOptions{caps: []codemode.Capability{echo, fail}})
			// Every call of these pauses the program.
			gated := newTwins(t, twinOptions{gov: &codemode.Governance{Key: key, Tools: map[string]codemode.ToolPolicy{"*": {RequiresApproval: true}}}})
			programs := map[string]string{
				"a tool's name":        `async () => { const T = ` + lit + `; try { return await db[T](T) } catch (e) { return "caught " + e.message } }`,
				"arguments":            `async () => { const T = ` + lit + `; return await db.echo(T, {[T]: T}, [T]) }`,
				"a log":                `async () => { const T = ` + lit + `; console.log(T); console.error("e", T); return T.length }`,
				"a result":             `async () => { const T = ` + lit + `; return {[T]: T, n: T.length} }`,
				"a throw":              `async () => { const T = ` + lit + `; throw new Error(T) }`,
				"a thrown value":       `async () => { const T = ` + lit + `; throw T }`,
				"a failure let escape": `async () => { const T = ` + lit + `; await db.gofail(T) }`,
				"a text answer":        `async () => { const T = ` + lit + `; const s = await db.raw(T); return [s, [...s].map(c => c.codePointAt(0))] }`,
				"a pause":              `async () => { const T = ` + lit + `; return await gate[T](T) }`,
			}
			for what, code := range programs {
				pair := tw
				if what == "a pause" {
					pair = gated
				}
				var got []executed
				for _, r := range pair.both() {
					c := &calls{answer: "\xed\xa0\x80 \xff"}
					req := codemode.Request{Code: code, Dispatch: c.dispatch,
						Providers: []codemode.Provider{{Name: "db"}, {Name: "gate"}}}
					got = append(got, executedOf(r.r.Execute(ctx, req), c))
				}
				if p := got[0].Paused; p != nil && got[1].Paused != nil && !utf8.ValidString(p.Tool) {
					// A known difference, the root package's: a continuation
					// holds its calls as JSON, which has no room for a name
					// that is not UTF-8 (each such byte becomes U+FFFD, and a
					// resumption in process diverges); the client shows
					// the call the continuation holds. The list only shrinks.
					assert.NotEqual(t, p.Tool, got[1].Paused.Tool, "the continuation keeps the name now: drop this exception")
					got[1].Paused.Tool = p.Tool
				}
				assert.Equal(t, got[0], got[1], "%s: %s", what, code)
			}
			// The unary path: no providers, no dispatch.
			code := `async () => { const T = ` + lit + `; console.log(T); throw new TypeError(T) }`
			var alone []executed
			for _, r := range tw.both() {
				alone = append(alone, executedOf(r.r.Execute(ctx, codemode.Request{Code: code}), nil))
			}
			assert.Equal(t, alone[0], alone[1], "Standalone: %s", code)
			// Run: capabilities' arguments, answers and failures, logs, results, throws.
			for what, script := range map[string]string{
				"a capability's arguments": `const T = ` + lit + `; return echo({t: T, [T]: [T]})`,
				"a capability's failure":   `const T = ` + lit + `; return fail({t: T})`,
				"a caught failure":         `const T = ` + lit + `; try { fail({t: T}) } catch (e) { return e.message }`,
				"a log and a result":       `const T = ` + lit + `; console.log(T); return [T, {[T]: 1}]`,
				"a throw":                  `const T = ` + lit + `; throw new RangeError(T)`,
			} {
				var got []ran
				for _, r := range tw.both() {
					got = append(got, ranOf(r.r.Run(ctx, script)))
				}
				assert.Equal(t, got[0], got[1], "Run %s: %s", what, script)
			}
			// A retained sandbox's answers, failures and logs.
			type retained struct {
				Value string
				Err   *errOutcome
				Logs  []string
			}
			var kept []retained
			for _, r := range tw.both() {
				res := r.r.Execute(ctx, codemode.Request{Code: `async () => { const T = ` + lit + `; return {f: (x) => { console.log(T, x); return [T, x] }, g: () => { throw new Error(T) }} }`,
					RetainHandles: true})
				require.Empty(t, res.Error, r.name)
				v, err := codemode.ParseForDispatch(string(res.Result))
				require.NoError(t, err)
				m := v.(map[string]any)
				got, err := res.Retained.Call(ctx, m["f"].(codemode.Handle), "\xed\xa0\x80")
				require.NoError(t, err, r.name)
				b, _ := codemode.StringifyForDispatch(got)
				_, gerr := res.Retained.Call(ctx, m["g"].(codemode.Handle))
				kept = append(kept, retained{b, outcomeOf(gerr), res.Retained.Logs()})
				res.Retained.Close()
			}
			assert.Equal(t, kept[0], kept[1], "a retained sandbox")
		})
	}
	for name, text := range goTexts {
		t.Run("go "+name, func(t *testing.T) {
			t.Parallel()
			echo := codemode.Capability{Name: "answer", Unchecked: true, Description: text, Func: func(context.Context, json.RawMessage) (any, error) {
				return json.RawMessage(`"` + text + `"`), nil
			}}
			fail := codemode.Capability{Name: "fail", Unchecked: true, Func: func(context.Context, json.RawMessage) (any, error) {
				return nil, errors.New(text)
			}}
			tw := newTwins(t, twinOptions{caps: []codemode.Capability{echo, fail},
				gov: &codemode.Governance{Key: key, Tools: map[string]codemode.ToolPolicy{"gate." + text: {RequiresApproval: true}}}})
			for what, req := range map[string]codemode.Request{
				"an answer": {Code: `async () => { const s = await db.raw(); return [s, [...s].map(c => c.codePointAt(0))] }`,
					Providers: []codemode.Provider{{Name: "db"}}},
				"an error answer":   {Code: `async () => { try { await db.fail() } catch (e) { return e.message } }`, Providers: []codemode.Provider{{Name: "db"}}},
				"a Go error":        {Code: `async () => await db.gofail()`, Providers: []codemode.Provider{{Name: "db"}}},
				"a provider's name": {Code: `async () => 1`, Providers: []codemode.Provider{{Name: text}}},
				"a tool's name": {Code: `async () => Object.keys(db)`,
					Providers: []codemode.Provider{{Name: "db", Tools: []string{text, "x"}}}},
				"a declaration": {Code: `async () => await db.get(1)`, Providers: []codemode.Provider{{Name: "db",
					APIs: []codemode.ProviderTool{{Name: "get", Description: text, Params: json.RawMessage(`{"type":"number","description":"` + text + `"}`)}}}}},
				"a prelude": {Code: `async () => globalThis.p`, Providers: []codemode.Provider{{Name: "db", Prelude: `globalThis.p = "` + text + `"`}}},
				"the code":  {Code: `async () => "` + text + `"`},
			} {
				var got []executed
				for _, r := range tw.both() {
					c := &calls{answer: text}
					if req.Providers != nil {
						req.Dispatch = c.dispatch
					} else {
						c = nil
					}
					got = append(got, executedOf(r.r.Execute(ctx, req), c))
				}
				assert.Equal(t, got[0], got[1], "%s: %+v", what, req)
			}
			for what, script := range map[string]string{
				"a capability's answer":  `const s = answer({}); return [s, [...s].map(c => c.codePointAt(0))]`,
				"a capability's failure": `return fail({})`,
				"the code":               `return "` + text + `"`,
			} {
				var got []ran
				for _, r := range tw.both() {
					got = append(got, ranOf(r.r.Run(ctx, script)))
				}
				assert.Equal(t, got[0], got[1], "Run %s: %s", what, script)
			}
		})
	}
}
