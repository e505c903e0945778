package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/codemode-go/codemode"
	cmcp "github.com/codemode-go/codemode/mcp"
)

// toolbox is what serves a command's tool calls: providers and the
// dispatch behind them, and the tape recording or replaying them.
type toolbox struct {
	providers []codemode.Provider
	fixtures  map[string]map[string][]fixture // provider -> tool -> answers
	proc      *procDispatch                   // --dispatch-cmd, or nil
	procNames map[string]bool                 // the providers it serves
	rec       *recorder                       // --record, or nil
	tape      *tape                           // --replay, or nil
	mcp       *cmcp.Router                    // --mcp, or nil
	ups       []*cmcp.Upstream
}

// open builds the toolbox the flags describe (MCP servers that do not
// start are reported on stderr).
func (tf *toolFlags) open(ctx context.Context, stderr io.Writer) (*toolbox, error) {
	tb := &toolbox{procNames: map[string]bool{}}
	if tf.replay != "" && (tf.fixtures != "" || tf.dispatchCmd != "" || tf.record != "" || tf.mcp != "") {
		return nil, usagef("--replay serves every call from its tape: it takes no --tools, --dispatch-cmd, --mcp or --record")
	}
	if tf.replay != "" {
		t, err := readTape(tf.replay)
		if err != nil {
			return nil, err
		}
		tb.tape = t
		for _, name := range t.providerNames() {
			tb.providers = append(tb.providers, codemode.Provider{Name: name})
		}
		return tb, nil
	}
	if tf.fixtures != "" {
		fx, err := readFixtures(tf.fixtures)
		if err != nil {
			return nil, err
		}
		tb.fixtures = fx
		for _, name := range sortedKeys(fx) {
			tb.providers = append(tb.providers, codemode.Provider{Name: name, Tools: sortedKeys(fx[name])})
		}
	}
	if tf.startTimeout <= 0 {
		return nil, usagef("--dispatch-start-timeout must be positive")
	}
	if tf.providers != "" && tf.dispatchCmd == "" {
		return nil, usagef("--providers names the providers --dispatch-cmd serves; give --dispatch-cmd too")
	}
	if tf.dispatchCmd != "" {
		if tf.providers == "" {
			return nil, usagef("--dispatch-cmd needs --providers: the provider names scripts may use")
		}
		for _, name := range strings.Split(tf.providers, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if tb.fixtures[name] != nil || tb.procNames[name] {
				return nil, usagef("provider %q is given twice", name)
			}
			tb.procNames[name] = true
			tb.providers = append(tb.providers, codemode.Provider{Name: name})
		}
		tb.proc = newProcDispatch(tf.dispatchCmd, tf.startTimeout)
	}
	if tf.mcp != "" {
		ups, router, err := openMCP(ctx, tf.mcp, stderr)
		if err != nil {
			return nil, err
		}
		for _, p := range router.Providers() {
			if tb.fixtures[p.Name] != nil || tb.procNames[p.Name] {
				closeAll(ups)
				return nil, usagef("provider %q is given twice", p.Name)
			}
			tb.providers = append(tb.providers, p)
		}
		tb.mcp, tb.ups = router, ups
	}
	if tf.record != "" {
		r, err := newRecorder(tf.record)
		if err != nil {
			closeAll(tb.ups)
			return nil, err
		}
		tb.rec = r
	}
	if tb.proc != nil && !tf.listOnly {
		// Started now, the first job runs once it is ready (it answered
		// its ping), and no job's deadline pays for its start.
		if err := tb.proc.open(ctx); err != nil {
			tb.close()
			return nil, err
		}
	}
	return tb, nil
}

// hold returns when the tool servers a job may use are ready: a
// --dispatch-cmd that died is restarted first. A job calls it before it
// starts, so the wait is charged to no run's deadline; a server that does
// not come back fails the job's calls saying so.
func (tb *toolbox) hold(ctx context.Context, providers []string) {
	for _, u := range tb.ups { // an MCP server that went away reconnects first, likewise
		if providers == nil || slices.Contains(providers, u.Name()) {
			rctx, cancel := context.WithTimeout(ctx, mcpReadyTimeout)
			u.Ready(rctx) // one that does not come back fails the job's calls saying so
			cancel()
		}
	}
	if tb.proc == nil {
		return
	}
	if providers != nil && !slices.ContainsFunc(providers, func(p string) bool { return tb.procNames[p] }) {
		return
	}
	tb.proc.hold(ctx)
}

// mcpReadyTimeout bounds the wait for a lost MCP server's reconnection
// before a job (its connect and listing have bounds of their own).
const mcpReadyTimeout = 30 * time.Second

// taped reports whether runs record to or replay from a tape (then each
// run gets a dispatch of its own).
func (tb *toolbox) taped() bool { return tb.rec != nil || tb.tape != nil }

// close stops the subprocess and flushes the tape.
func (tb *toolbox) close() error {
	if tb.proc != nil {
		tb.proc.close()
	}
	closeAll(tb.ups)
	if tb.rec != nil {
		return tb.rec.close()
	}
	return nil
}

// serve answers a call from the fixtures or the subprocess.
func (tb *toolbox) serve(ctx context.Context, provider, tool, args string) (string, error) {
	if fx, ok := tb.fixtures[provider]; ok {
		return answerFixture(fx, tool, args)
	}
	if tb.procNames[provider] {
		return tb.proc.call(ctx, provider, tool, args)
	}
	if tb.mcp != nil {
		return tb.mcp.Dispatch(ctx, provider, tool, args)
	}
	return "", codemode.ToolNotFoundError{Tool: tool}
}

// job is one run's view of the toolbox: its dispatch (recording or
// replaying) and, when replaying, whether it diverged.
type job struct {
	dispatch codemode.DispatchFunc
	det      *codemode.Determinism
	replay   *jobReplay
}

// forJob prepares a run: a recorded one is made deterministic with a fresh
// seed and the current time, which the tape keeps; a replayed one gets the
// tape's.
func (tb *toolbox) forJob(id string, providers []string) (*job, error) {
	return tb.forRun(id, providers, 0, nil)
}

// forRun prepares run rep (from 0) of a job (--repeat): every replayed run
// follows the tape afresh; a recorded job's runs share det (fresh when
// nil), and only its first run is recorded (the tape has each job once).
func (tb *toolbox) forRun(id string, providers []string, rep int, det *codemode.Determinism) (*job, error) {
	j := &job{dispatch: tb.serve}
	switch {
	case tb.tape != nil:
		r, err := tb.tape.start(id)
		if err != nil {
			return nil, err
		}
		j.replay, j.dispatch = r, r.dispatch
		det := r.det
		j.det = &det
	case tb.rec != nil:
		if det == nil {
			fresh := freshDeterminism()
			det = &fresh
		}
		j.det = det
		if rep == 0 {
			j.dispatch = tb.rec.start(id, *det, providerList(tb.providers, providers), tb.serve)
		}
	}
	return j, nil
}

// providerList is the names a job may use.
func providerList(all []codemode.Provider, names []string) []string {
	if names != nil {
		return names
	}
	out := make([]string, len(all))
	for i, p := range all {
		out[i] = p.Name
	}
	return out
}

// fixture is one canned answer: for calls whose arguments equal Args (any
// call when absent), Result, or Error as the tool's failure.
type fixture struct {
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
	Error  *string         `json:"error"`
	args   any             // Args decoded
}

// readFixtures reads {"provider": {"tool": [fixture, ...]}}.
func readFixtures(path string) (map[string]map[string][]fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--tools: %v", err)
	}
	var fx map[string]map[string][]fixture
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fx); err != nil {
		return nil, usagef("--tools %s: want {\"provider\": {\"tool\": [{\"args\"?: [...], \"result\": ... | \"error\": \"...\"}]}}: %v", path, jsonProblem(err))
	}
	for p, tools := range fx {
		for t, answers := range tools {
			for i := range answers {
				a := &answers[i]
				if (a.Result == nil) == (a.Error == nil) {
					return nil, usagef("--tools %s: %s.%s answer %d: give exactly one of result and error", path, p, t, i+1)
				}
				if a.Args != nil {
					if err := json.Unmarshal(a.Args, &a.args); err != nil {
						return nil, usagef("--tools %s: %s.%s answer %d: args: %v", path, p, t, i+1, err)
					}
				}
			}
		}
	}
	return fx, nil
}

// answerFixture returns the first answer matching a call, as an envelope.
func answerFixture(tools map[string][]fixture, tool, args string) (string, error) {
	answers, ok := tools[tool]
	if !ok {
		return "", codemode.ToolNotFoundError{Tool: tool}
	}
	var got any
	if err := json.Unmarshal([]byte(args), &got); err != nil {
		return "", fmt.Errorf("the call's arguments are not JSON: %v", err)
	}
	for _, a := range answers {
		if a.Args != nil && !reflect.DeepEqual(a.args, got) {
			continue
		}
		if a.Error != nil {
			return envelope("error", *a.Error)
		}
		return `{"result":` + string(a.Result) + `}`, nil
	}
	return "", fmt.Errorf("no fixture of %s matches the arguments %s", tool, args)
}

// envelope is {"<key>": v}.
func envelope(key string, v any) (string, error) {
	b, err := json.Marshal(map[string]any{key: v})
	return string(b), err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
