package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
)

// newProgramFlags registers the flags of a command that runs programs
// (run, batch, resume): the limits, the tools, the governance.
func newProgramFlags(fs *flag.FlagSet) (*limitFlags, *toolFlags, *govFlags) {
	lf, tf, gf := new(limitFlags), new(toolFlags), new(govFlags)
	lf.register(fs, toolDeadlines)
	tf.register(fs)
	gf.register(fs)
	return lf, tf, gf
}

// govFlags are the flags of governed tool calls (run, batch, resume, mcp).
type govFlags struct {
	policy  string
	keyFile string
}

func (gf *govFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&gf.policy, "policy", "", "a JSON file of per-tool policies: timeouts, in-flight caps, budgets, approval (codemode resume -h)")
	fs.StringVar(&gf.keyFile, "key-file", "", "the key that authenticates continuations (at least 32 bytes; a trailing newline is dropped)")
}

// policyFile is --policy's file:
//
//	{"tools": {"store.write": {"requires_approval": true, "timeout": "5s",
//	           "max_in_flight": 2, "budget": 10},
//	           "store.get": {"effect": "read"}},
//	 "ttl": "24h", "encrypt": true}
type policyFile struct {
	Tools map[string]struct {
		Timeout          string `json:"timeout"`
		MaxInFlight      int    `json:"max_in_flight"`
		Budget           int    `json:"budget"`
		RequiresApproval bool   `json:"requires_approval"`
		Effect           string `json:"effect"`
	} `json:"tools"`
	TTL     string `json:"ttl"`
	Encrypt bool   `json:"encrypt"`
}

// readKey reads --key-file's key (a trailing newline dropped).
func readKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--key-file: %v", err)
	}
	return bytes.TrimSuffix(bytes.TrimSuffix(key, []byte("\n")), []byte("\r")), nil
}

// governance reads the flags' files: nil without --policy and --key-file.
func (gf *govFlags) governance() (*codemode.Governance, error) {
	if gf.policy == "" && gf.keyFile == "" {
		return nil, nil
	}
	g := &codemode.Governance{Tools: map[string]codemode.ToolPolicy{}}
	if gf.keyFile != "" {
		key, err := readKey(gf.keyFile)
		if err != nil {
			return nil, err
		}
		g.Key = key
	}
	if gf.policy != "" {
		b, err := os.ReadFile(gf.policy)
		if err != nil {
			return nil, usagef("--policy: %v", err)
		}
		var pf policyFile
		if err := jsonv2.Unmarshal(b, &pf, jsonv2.RejectUnknownMembers(true)); err != nil {
			return nil, usagef("--policy %s: %v", gf.policy, err)
		}
		for name, t := range pf.Tools {
			p := codemode.ToolPolicy{MaxInFlight: t.MaxInFlight, Budget: t.Budget, RequiresApproval: t.RequiresApproval,
				Effect: codemode.Effect(t.Effect)}
			if t.Timeout != "" {
				if p.Timeout, err = time.ParseDuration(t.Timeout); err != nil || p.Timeout <= 0 {
					return nil, usagef("--policy %s: tool %q: timeout %q is not a positive duration", gf.policy, name, t.Timeout)
				}
			}
			g.Tools[name] = p
		}
		if pf.TTL != "" {
			if g.TTL, err = time.ParseDuration(pf.TTL); err != nil || g.TTL <= 0 {
				return nil, usagef("--policy %s: ttl %q is not a positive duration", gf.policy, pf.TTL)
			}
		}
		g.Encrypt = pf.Encrypt
	}
	if err := g.Validate(); err != nil {
		return nil, usagef("--policy/--key-file: %v", err)
	}
	return g, nil
}

// withEffects is g with the effects the tools' servers declare (an MCP
// server's read-only tools) where its own policies declare none: the
// policy file's word wins. Nil when there is nothing to declare or govern.
func withEffects(g *codemode.Governance, effects map[string]codemode.Effect) *codemode.Governance {
	if len(effects) == 0 {
		return g
	}
	if g == nil {
		g = &codemode.Governance{}
	}
	if g.Tools == nil {
		g.Tools = map[string]codemode.ToolPolicy{}
	}
	for name, e := range effects {
		p := g.Tools[name]
		if p.Effect == "" {
			p.Effect = e
			g.Tools[name] = p
		}
	}
	return g
}

// options are the executor options of the flags.
func (gf *govFlags) options() ([]codemode.Option, error) {
	g, err := gf.governance()
	if err != nil || g == nil {
		return nil, err
	}
	return []codemode.Option{codemode.WithGovernance(*g)}, nil
}

// exitPaused is the status of a run that paused at a call needing a decision.
const exitPaused = 6

// pausedObject is a paused outcome as run, resume and batch print it:
// the call waiting, and the continuation (base64) that resumes it.
func pausedObject(p *codemode.Paused) json.RawMessage {
	b, _ := json.Marshal(struct {
		Tool         string          `json:"tool"`
		Args         json.RawMessage `json:"args"`
		Completed    int             `json:"completed"`
		Expires      string          `json:"expires"`
		Continuation string          `json:"continuation"`
	}{p.Tool, p.Args, p.Completed, p.Expires.UTC().Format(time.RFC3339), base64.StdEncoding.EncodeToString(p.Continuation)})
	return b
}

const resumeHelp = `Resumes a run that paused at a tool call needing approval, with the decision
for that call: --approve, --reject REASON, or --edit ARGS (approve with these
arguments, JSON). CONTINUATION is a file (or - for stdin) holding the
continuation: its base64 text, or the whole line run or batch printed for the
paused run ({"id": ..., "paused": {"continuation": ...}}).

The run starts again from its beginning with its seed and clock; every tool
call it made before the pause is answered from the continuation (none runs
again), the paused call gets the decision, and the run goes on live with the
tools the flags give (as run's: --tools, --dispatch-cmd, --mcp). It prints
what run prints, or, when it pauses again at a later call:

  {"paused": {"tool": "store.write", "args": [...], "completed": 4, "expires": "...", "continuation": "..."}, "logs": [...]}

(exit 6). The key (--key-file) must be the one the run paused with; the
limits are those the run had (the deadline is this command's). --policy is
read as run reads it, a file like

  {"tools": {"store.write": {"requires_approval": true, "timeout": "5s",
             "max_in_flight": 2, "budget": 10},
             "store.get": {"effect": "read"}},
   "ttl": "24h", "encrypt": true}

where tools are named "provider.tool" (a capability by its name), "*" names
every tool not named, effect ("read" or "write", the default) is what the tool
does to the world, for the "effects" of a failed run (whether a retry can
repeat a write), ttl is how long a continuation lasts (default 24h), and
encrypt seals continuations so their text reveals nothing. A continuation can
be resumed again (each time from the same record) until it expires: keep the
ones you resumed if a second resume must be refused.

Examples:
  codemode batch --policy policy.json --key-file key --tools fixtures.json -o out.jsonl jobs.jsonl
  grep '"paused"' out.jsonl | head -1 > paused.json
  codemode resume --key-file key --tools fixtures.json --approve paused.json
  codemode resume --key-file key --tools fixtures.json --reject 'not this account' paused.json

Exit status: as run's, and 6 when the run paused again.
`

func cmdResume(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("resume", "[flags] --approve|--reject REASON|--edit ARGS CONTINUATION|-", resumeHelp, stderr)
	lf, tf, gf := newProgramFlags(fs)
	approve := fs.Bool("approve", false, "approve the call")
	reject := fs.String("reject", "", "reject the call with this reason (the program catches it)")
	edit := fs.String("edit", "", "approve the call with these arguments (JSON)")
	pretty := fs.Bool("pretty", false, "indent the output")
	if code, ok := parseOne(fs, args, "the continuation's file"); !ok {
		return code
	}
	lf.forTools(tf)
	set := 0
	var d codemode.Decision
	if *approve {
		set, d = set+1, codemode.Approve()
	}
	if *reject != "" {
		set, d = set+1, codemode.Reject(*reject)
	}
	if *edit != "" {
		if !json.Valid([]byte(*edit)) {
			return exitFor(stderr, usagef("--edit: the arguments are not JSON"))
		}
		set, d = set+1, codemode.ApproveWith(json.RawMessage(*edit))
	}
	if set != 1 {
		return exitFor(stderr, usagef("give one decision: --approve, --reject REASON or --edit ARGS"))
	}
	g, err := gf.governance()
	if err != nil {
		return exitFor(stderr, err)
	}
	if g == nil || len(g.Key) == 0 {
		return exitFor(stderr, usagef("--key-file: the key the run paused with"))
	}
	text, err := readSource(fs.Arg(0), stdin)
	if err != nil {
		return exitFor(stderr, err)
	}
	cont, err := continuationText(text)
	if err != nil {
		return exitFor(stderr, err)
	}
	info, err := codemode.InspectContinuation(g.Key, cont)
	if err != nil {
		return exitFor(stderr, usagef("%s", strings.TrimPrefix(err.Error(), "codemode: ")))
	}
	limits := info.Limits
	limits.Deadline = lf.l.Deadline
	tb, err := tf.open(ctx, stderr)
	if err != nil {
		return exitFor(stderr, err)
	}
	j, err := tb.forJob(`"resume"`, nil)
	if err != nil {
		tb.close()
		return exitFor(stderr, usagef("%v", err))
	}
	var out batch.Outcome
	for _, o := range batch.Run(ctx, func(yield func(batch.Job) bool) {
		yield(batch.Job{ID: `"resume"`, Resume: &batch.Resumption{Continuation: cont, Decision: d}})
	}, batch.Options{Limits: limits, Providers: tb.providers, Concurrency: 1, Executor: []codemode.Option{codemode.WithGovernance(*g)},
		DispatchFor: func(batch.Job) codemode.DispatchFunc { return j.dispatch }}) {
		out = o
	}
	if err := tb.close(); err != nil {
		fmt.Fprintf(stderr, "codemode: %v\n", err)
	}
	return printOutcome(stdout, stderr, out, *pretty)
}

// continuationText finds the continuation in what resume was given: its
// base64 text, or a result line with "paused".
func continuationText(text string) ([]byte, error) {
	t := bytes.TrimSpace([]byte(text))
	if len(t) > 0 && t[0] == '{' {
		var line struct {
			Paused *struct {
				Continuation string `json:"continuation"`
			} `json:"paused"`
		}
		if err := json.Unmarshal(t, &line); err != nil || line.Paused == nil {
			return nil, usagef("the line holds no \"paused\" object with a continuation")
		}
		t = []byte(line.Paused.Continuation)
	}
	if uq, err := strconv.Unquote(string(t)); err == nil {
		t = []byte(uq)
	}
	b, err := base64.StdEncoding.DecodeString(string(t))
	if err != nil {
		return nil, usagef("the continuation is not base64: %v", err)
	}
	return b, nil
}
