package typescript

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/internal/jspos"
)

// A Checker type-checks programs against the declarations the model was
// shown, with TypeScript's own compiler: TypeScript 7's native tsc, one
// long-lived process speaking the language server protocol over its
// standard streams (`tsc --lsp --stdio`), which serves many checks. Only
// diagnostics that predict a failure at run time are reported (see
// FailureCodes): a program a model writes as plain JavaScript, reading
// results declared unknown, passes. Safe for concurrent use: checks take
// turns on the process (each is a few milliseconds warm).
type Checker struct {
	tsc     string
	timeout time.Duration
	dir     string // the workspace: its tsconfig.json, and the checked files' names (they exist only in the process)

	mu   sync.Mutex // one check at a time on the process
	proc *lspProcess
	seq  int
}

// CheckerOptions configure NewChecker.
type CheckerOptions struct {
	// TSC is the path of TypeScript 7's native tsc binary (the npm package
	// typescript@7 installs it as
	// node_modules/@typescript/typescript-<os>-<arch>/lib/tsc). Empty: the
	// environment variable CODEMODE_TSC, else that path under the working
	// directory's node_modules or its parents'.
	TSC string
	// Timeout bounds one check, the process's start included (default 10
	// s), besides the check's context.
	Timeout time.Duration
}

// ErrNoChecker is matched by NewChecker's error when no tsc binary is found.
var ErrNoChecker = errors.New("typescript: TypeScript 7's native tsc was not found (npm install typescript@7; or CheckerOptions.TSC, or CODEMODE_TSC)")

// NewChecker finds tsc and starts it. Without it, the error matches
// ErrNoChecker: asking for checks without the checker is never a silent
// skip.
func NewChecker(opts CheckerOptions) (*Checker, error) {
	tsc := opts.TSC
	if tsc == "" {
		tsc = os.Getenv("CODEMODE_TSC")
	}
	if tsc == "" {
		tsc = findTSC()
	}
	if tsc == "" {
		return nil, ErrNoChecker
	}
	if st, err := os.Stat(tsc); err != nil || st.IsDir() {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoChecker, tsc, err)
	}
	dir, err := os.MkdirTemp("", "codemode-check")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(tsconfig), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &Checker{tsc: tsc, timeout: opts.Timeout, dir: dir}
	if c.timeout <= 0 {
		c.timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// tsconfig keeps the compiler to ECMAScript's library (no DOM, no Node
// types) and checks JavaScript too, as a script's JavaScript runs: not
// strict, no implicit-any complaints.
const tsconfig = `{"compilerOptions": {"lib": ["es2023"], "types": [], "target": "es2023", "noEmit": true, "allowJs": true,
  "checkJs": true, "strict": false, "skipLibCheck": true}, "include": ["*.ts", "*.js"]}
`

// findTSC looks for the platform's tsc under node_modules here and above.
func findTSC() string {
	rel := filepath.Join("node_modules", "@typescript", "typescript-"+runtime.GOOS+"-"+goarchNode(), "lib", "tsc")
	dir, err := os.Getwd()
	for err == nil {
		p := filepath.Join(dir, rel)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// goarchNode is GOARCH as npm's platform packages name it.
func goarchNode() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x64"
	case "386":
		return "ia32"
	}
	return runtime.GOARCH
}

// Diagnostic is one problem the checker found, at a position in the
// program as the model wrote it (1-based line and column, columns in
// UTF-16 units as TypeScript counts them).
type Diagnostic struct {
	Line, Column int
	Code         int
	Message      string
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%d:%d TS%d %s", d.Line, d.Column, d.Code, d.Message)
}

// FailureCodes are the diagnostics a check reports: each predicts that the
// program fails when it runs. A name that does not exist (2304, 2552;
// 2584, 2580, 2591: the DOM's or Node's — document, require, process —
// which a sandbox has not); a
// property that does not exist on a declared type — a tool that is not
// there, a result read as the wrong shape (2339, 2551); calling what is
// not callable (2349); the wrong number of arguments (2554, 2555); an
// unknown property in an argument whose type is a closed object literal
// (2353) and a required property missing from one (2741). Type
// mismatches that JavaScript coerces, implicit anys, unused names and
// strictness complaints are not reported: a checker that refuses correct
// programs gets switched off. Nor is a write to a property a type does
// not declare (`o.later = 1`: JavaScript adds it), nor a read of one of
// a value declared unknown (a tool whose result has no declared type: the
// program reads it as JavaScript would). A program that parses
// as JavaScript is checked as JavaScript (checkJs: its own functions'
// parameters are optional, as they are when it runs); one with
// TypeScript's syntax as TypeScript. Nor are more arguments than a
// declaration takes (JavaScript ignores them), nor typeof of a name that
// does not exist (a feature test).
var FailureCodes = []int{2304, 2339, 2349, 2353, 2551, 2552, 2554, 2555, 2580, 2584, 2591, 2741}

// CheckInput is what a check reads: the program, and what the model was
// told it may call.
type CheckInput struct {
	// Program is the model's program, in any shape a run takes: the body
	// of an async function (top-level await and return), an arrow or a
	// function, inside a markdown fence or not, JavaScript or TypeScript.
	Program string
	// Declarations are the TypeScript declarations of the program's APIs
	// (codemode.Declarations, codemode.ProviderDeclarations).
	Declarations string
	// Network declares fetch and its classes (an executor that grants the
	// network).
	Network bool
}

// Check type-checks in's program and returns the diagnostics that predict
// a failure (FailureCodes), in order. The process is started again if it
// died, and the check retried once; then the error says so.
func (c *Checker) Check(ctx context.Context, in CheckInput) ([]Diagnostic, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if c.proc == nil {
			if err = c.start(ctx); err != nil {
				return nil, err
			}
		}
		var ds []Diagnostic
		ds, err = c.check(ctx, in)
		if err == nil {
			return ds, nil
		}
		if ctx.Err() != nil {
			c.stop() // a check cut short leaves the process mid-request
			return nil, fmt.Errorf("typescript: the check did not finish: %w", ctx.Err())
		}
		c.stop()
	}
	return nil, fmt.Errorf("typescript: the checker failed twice: %w", err)
}

// Close stops the process and removes its workspace.
func (c *Checker) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stop()
	return os.RemoveAll(c.dir)
}

// check runs one check on the live process: the declarations and the
// program as two open files of the workspace, closed afterwards.
func (c *Checker) check(ctx context.Context, in CheckInput) ([]Diagnostic, error) {
	c.seq++
	base := "file://" + filepath.ToSlash(c.dir) + "/check" + strconv.Itoa(c.seq)
	// Not base+".d.ts": beside base+".ts" the compiler takes a .d.ts of the
	// same name for the .ts file's own output and leaves it out.
	declURI, lang, ext := base+"-api.d.ts", "typescript", ".ts"
	if isJavaScript(in.Program) {
		lang, ext = "javascript", ".js"
	}
	uri := base + ext
	text, head := programText(shaped(in.Program))
	p := c.proc
	for _, f := range []struct{ uri, lang, text string }{{declURI, "typescript", declText(in)}, {uri, lang, text}} {
		if err := p.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
			"uri": f.uri, "languageId": f.lang, "version": 1, "text": f.text}}); err != nil {
			return nil, err
		}
		defer p.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": f.uri}})
	}
	if midCheck != nil {
		midCheck(p.cmd.Process.Pid)
	}
	var res struct {
		Items []struct {
			Range struct {
				Start struct{ Line, Character int } `json:"start"`
				End   struct{ Line, Character int } `json:"end"`
			} `json:"range"`
			Code     json.RawMessage `json:"code"`
			Message  string          `json:"message"`
			Severity int             `json:"severity"`
		} `json:"items"`
	}
	if err := p.call(ctx, "textDocument/diagnostic", map[string]any{"textDocument": map[string]any{"uri": uri}}, &res); err != nil {
		return nil, err
	}
	var out []Diagnostic
	for _, it := range res.Items {
		code, err := strconv.Atoi(strings.Trim(string(it.Code), `"`))
		if err != nil || !slices.Contains(FailureCodes, code) || it.Range.Start.Line < head {
			continue
		}
		if (code == 2339 || code == 2551) && (assigned(text, it.Range.End.Line, it.Range.End.Character) ||
			strings.Contains(it.Message, "on type 'unknown'")) {
			continue // a property written (JavaScript adds it), or read of what was declared unknown
		}
		if missingName(code) && typeofOperand(text, it.Range.Start.Line, it.Range.Start.Character) {
			continue // typeof of a name that does not exist is "undefined", no error
		}
		if code == 2554 && extraArguments(it.Message) {
			continue // more arguments than declared: JavaScript ignores them
		}
		msg, _, _ := strings.Cut(it.Message, "\n")
		out = append(out, Diagnostic{Line: it.Range.Start.Line - head + 1, Column: it.Range.Start.Character + 1, Code: code, Message: msg})
	}
	slices.SortStableFunc(out, func(a, b Diagnostic) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	return out, nil
}

// midCheck, when set (tests), is called with the process's pid once a
// check's files are open and before its diagnostics are asked for.
var midCheck func(pid int)

// declText is the declarations file of a check: the sandbox's web
// globals and the program's APIs.
func declText(in CheckInput) string {
	t := sandboxGlobals + in.Declarations
	if in.Network {
		t += networkGlobals
	}
	return t
}

// programText is the program file of a check: the program as an async
// function's body (top-level await and return), its lines its own; head
// is the 0-based line the program starts on.
func programText(program string) (text string, head int) {
	return "async function __codemode_program() {\n" + program + "\n}\n", 1
}

// shaped is the program as the checker reads it: a markdown fence around
// it, or `export default` before it, blanked (spaces, newlines kept), so
// that every position is the model's own.
func shaped(program string) string {
	return jspos.Instrument(program, jspos.Body).Original()
}

// isJavaScript reports whether a program parses as JavaScript (a body).
func isJavaScript(program string) bool {
	f := jspos.Instrument(program, jspos.Body).Form()
	return f != jspos.Invalid && f != jspos.Unread
}

// argumentCount reads TypeScript's "Expected N arguments, but got M."
// (N may be a range A-B).
var argumentCount = regexp.MustCompile(`Expected (?:at least )?(\d+)(?:-(\d+))? arguments?, but got (\d+)`)

// extraArguments reports whether a 2554's call passes more arguments than
// declared (which does not fail), not fewer.
func extraArguments(msg string) bool {
	m := argumentCount.FindStringSubmatch(msg)
	if m == nil {
		return false
	}
	most, _ := strconv.Atoi(m[1])
	if m[2] != "" {
		most, _ = strconv.Atoi(m[2])
	}
	got, _ := strconv.Atoi(m[3])
	return got > most
}

// missingName says a code is a name's that does not exist.
func missingName(code int) bool {
	return code == 2304 || code == 2552 || code == 2580 || code == 2584 || code == 2591
}

// typeofOperand reports whether the name at 0-based line, character is
// typeof's operand (typeof document: a feature test, which does not fail).
func typeofOperand(text string, line, character int) bool {
	for i := 0; i < line; i++ {
		nl := strings.IndexByte(text, '\n')
		if nl < 0 {
			return false
		}
		text = text[nl+1:]
	}
	before := strings.TrimRight(text[:min(utf16Offset(text, character), len(text))], " \t(")
	return strings.HasSuffix(before, "typeof") && (len(before) == 6 || !isIdentByte(before[len(before)-7]))
}

// isIdentByte reports whether c may be part of an ASCII identifier.
func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// assigned reports whether the text at 0-based line, character is followed
// by an assignment (=, not == or =>): the property before it is written.
func assigned(text string, line, character int) bool {
	for i := 0; i < line; i++ {
		nl := strings.IndexByte(text, '\n')
		if nl < 0 {
			return false
		}
		text = text[nl+1:]
	}
	rest := strings.TrimLeft(text[min(utf16Offset(text, character), len(text)):], " \t")
	return strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==") && !strings.HasPrefix(rest, "=>")
}

// utf16Offset is the byte offset of the character'th UTF-16 unit of line.
func utf16Offset(line string, character int) int {
	units := 0
	for i, r := range line {
		if units >= character {
			return i
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	return len(line)
}

// sandboxGlobals declares what a sandbox has besides ECMAScript: console,
// the timers and the web globals (bridge_web.c), loosely: a check refuses
// names that do not exist (document, require, process), not uses of
// these.
const sandboxGlobals = `declare var console: { log(...a: any[]): void; info(...a: any[]): void; warn(...a: any[]): void; error(...a: any[]): void; debug(...a: any[]): void };
declare function setTimeout(f: (...a: any[]) => void, ms?: number, ...args: any[]): number;
declare function clearTimeout(id?: number): void;
declare function setInterval(f: (...a: any[]) => void, ms?: number, ...args: any[]): number;
declare function clearInterval(id?: number): void;
declare function atob(s: string): string;
declare function btoa(s: string): string;
declare function structuredClone<T>(value: T, options?: any): T;
declare var performance: { now(): number };
declare var crypto: { randomUUID(): string; getRandomValues<T>(a: T): T; [k: string]: any };
declare var TextEncoder: any, TextDecoder: any, URL: any, URLSearchParams: any, AbortController: any, AbortSignal: any,
  Event: any, EventTarget: any, DOMException: any;
`

// networkGlobals declares fetch and its classes.
const networkGlobals = `declare function fetch(input: any, init?: any): Promise<any>;
declare var Request: any, Response: any, Headers: any;
`

// start starts the process and initializes the language server.
func (c *Checker) start(ctx context.Context) error {
	p, err := startLSP(c.tsc)
	if err != nil {
		return err
	}
	var init json.RawMessage
	err = p.call(ctx, "initialize", map[string]any{"processId": os.Getpid(), "rootUri": "file://" + filepath.ToSlash(c.dir),
		"capabilities": map[string]any{"textDocument": map[string]any{"diagnostic": map[string]any{}}}}, &init)
	if err == nil {
		err = p.notify("initialized", map[string]any{})
	}
	if err != nil {
		p.kill()
		return fmt.Errorf("typescript: %s did not start as a language server: %w", c.tsc, err)
	}
	c.proc = p
	return nil
}

// stop ends the process, if any.
func (c *Checker) stop() {
	if c.proc != nil {
		c.proc.kill()
		c.proc = nil
	}
}

// lspProcess is a language server over a process's standard streams.
type lspProcess struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	wmu  sync.Mutex
	id   int
	dead chan struct{}
}

func startLSP(tsc string) (*lspProcess, error) {
	cmd := exec.Command(tsc, "--lsp", "--stdio")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("typescript: %w", err)
	}
	p := &lspProcess{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16), dead: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.dead)
	}()
	return p, nil
}

func (p *lspProcess) kill() {
	p.cmd.Process.Kill()
	p.in.Close()
	<-p.dead
}

func (p *lspProcess) write(msg map[string]any) error {
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := fmt.Fprintf(p.in, "Content-Length: %d\r\n\r\n", len(b)); err != nil {
		return err
	}
	_, err = p.in.Write(b)
	return err
}

func (p *lspProcess) notify(method string, params any) error {
	return p.write(map[string]any{"method": method, "params": params})
}

// maxMessage bounds a message from the server.
const maxMessage = 64 << 20

// call sends a request and reads until its response (answering the
// server's own requests with null), within ctx: a server that stops
// answering is killed.
func (p *lspProcess) call(ctx context.Context, method string, params, result any) error {
	p.id++
	id := p.id
	if err := p.write(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		for {
			raw, err := p.read()
			if err != nil {
				done <- err
				return
			}
			var m struct {
				ID     *json.RawMessage `json:"id"`
				Method string           `json:"method"`
				Result json.RawMessage  `json:"result"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				done <- fmt.Errorf("typescript: a message that is not JSON: %w", err)
				return
			}
			switch {
			case m.Method != "" && m.ID != nil: // a request of the server's
				p.write(map[string]any{"id": m.ID, "result": nil})
			case m.Method != "": // a notification
			case m.ID != nil && string(*m.ID) == strconv.Itoa(id):
				if m.Error != nil {
					done <- fmt.Errorf("typescript: %s: %s", method, m.Error.Message)
					return
				}
				done <- json.Unmarshal(m.Result, result)
				return
			}
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		p.kill() // the reader ends with the process
		<-done
		return ctx.Err()
	case <-p.dead:
		return errors.New("typescript: the checker process exited")
	}
}

// read reads one message.
func (p *lspProcess) read() ([]byte, error) {
	n := -1
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			n, err = strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, err
			}
		}
	}
	if n < 0 || n > maxMessage {
		return nil, fmt.Errorf("typescript: a message of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(p.out, b)
	return b, err
}

// CheckProgram is Check as a codemode.TypeChecker (codemode.WithTypeCheck).
func (c *Checker) CheckProgram(ctx context.Context, in codemode.TypeCheckInput) ([]codemode.TypeDiagnostic, error) {
	ds, err := c.Check(ctx, CheckInput{Program: in.Program, Declarations: in.Declarations, Network: in.Network})
	if err != nil {
		return nil, err
	}
	out := make([]codemode.TypeDiagnostic, len(ds))
	for i, d := range ds {
		out[i] = codemode.TypeDiagnostic{Line: d.Line, Column: d.Column, Code: d.Code, Message: d.Message}
	}
	return out, nil
}

var _ codemode.TypeChecker = (*Checker)(nil)
