package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// procDispatch serves tool calls through a subprocess speaking one JSON
// object per line: {"id","provider","tool","args"} on its stdin, and
// {"id","result"} or {"id","error"} on its stdout, in any order (calls in
// flight are matched by id). When it dies, the calls in flight fail with
// its exit status and the tail of its stderr, and the next call starts it
// again, after a backoff that grows while it keeps dying (100 ms to 5 s).
type procDispatch struct {
	command string

	mu      sync.Mutex
	cur     *proc
	nextID  uint64
	backoff time.Duration
	retry   time.Time // no start before this
	closed  bool
}

type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex // writes to stdin
	pmu     sync.Mutex // pending, dead, err
	pending map[uint64]chan procAnswer
	dead    chan struct{} // closed once it exited and its calls failed
	stderr  *tail
	err     error // why it died
}

type procAnswer struct {
	result json.RawMessage
	errMsg *string
	err    error
}

func newProcDispatch(command string) *procDispatch { return &procDispatch{command: command} }

// call sends one call and waits for its answer, the process's death or ctx.
func (d *procDispatch) call(ctx context.Context, provider, tool, args string) (string, error) {
	p, id, ch, err := d.send(ctx, provider, tool, args)
	if err != nil {
		return "", err
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return "", a.err
		}
		if a.errMsg != nil {
			return envelope("error", *a.errMsg)
		}
		return `{"result":` + string(a.result) + `}`, nil
	case <-ctx.Done():
		p.forget(id)
		return "", ctx.Err()
	}
}

// send starts the process if needed (a call waits out the backoff of a
// restart, under its context) and writes the call.
func (d *procDispatch) send(ctx context.Context, provider, tool, args string) (*proc, uint64, chan procAnswer, error) {
	d.mu.Lock()
	for d.cur == nil || d.cur.isDead() {
		wait := time.Until(d.retry)
		if wait <= 0 || d.closed {
			break
		}
		d.mu.Unlock()
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, 0, nil, fmt.Errorf("the dispatch command is restarting: %w", ctx.Err())
		}
		d.mu.Lock()
	}
	if d.closed {
		d.mu.Unlock()
		return nil, 0, nil, errors.New("the dispatch command is shut down")
	}
	if d.cur == nil || d.cur.isDead() {
		p, err := d.start()
		if err != nil {
			d.mu.Unlock()
			return nil, 0, nil, err
		}
		d.cur = p
	}
	p := d.cur
	d.nextID++
	id := d.nextID
	d.mu.Unlock()

	ch := make(chan procAnswer, 1)
	line, err := json.Marshal(struct {
		ID       uint64          `json:"id"`
		Provider string          `json:"provider"`
		Tool     string          `json:"tool"`
		Args     json.RawMessage `json:"args"`
	}{id, provider, tool, json.RawMessage(args)})
	if err != nil {
		return nil, 0, nil, err
	}
	p.pmu.Lock()
	if p.isDead() {
		p.pmu.Unlock()
		return nil, 0, nil, p.deathError()
	}
	p.pending[id] = ch
	p.pmu.Unlock()
	p.wmu.Lock()
	_, err = p.stdin.Write(append(line, '\n'))
	p.wmu.Unlock()
	if err != nil {
		p.forget(id)
		<-p.dead
		return nil, 0, nil, p.deathError()
	}
	return p, id, ch, nil
}

// start runs the command (d.mu held).
func (d *procDispatch) start() (*proc, error) {
	cmd := exec.Command("/bin/sh", "-c", d.command)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, pending: map[uint64]chan procAnswer{}, dead: make(chan struct{}), stderr: &tail{max: 2048}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		d.died()
		return nil, fmt.Errorf("the dispatch command does not start: %v", err)
	}
	started := time.Now()
	go p.read(stdout, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if time.Since(started) > 10*time.Second {
			d.backoff = 0 // it lived a while: a fresh start
		}
		d.died()
	})
	return p, nil
}

// died schedules the next start after a growing backoff (d.mu held).
func (d *procDispatch) died() {
	if d.backoff == 0 {
		d.backoff = 100 * time.Millisecond
	} else {
		d.backoff = min(2*d.backoff, 5*time.Second)
	}
	d.retry = time.Now().Add(d.backoff)
}

// read delivers the answers until stdout ends, then fails the calls in flight.
func (p *proc) read(stdout io.Reader, onDeath func()) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var a struct {
			ID     *uint64         `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *string         `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil || a.ID == nil {
			fmt.Fprintf(os.Stderr, "codemode: the dispatch command wrote a line that is no answer: %.200s\n", sc.Bytes())
			continue
		}
		p.pmu.Lock()
		ch := p.pending[*a.ID]
		delete(p.pending, *a.ID)
		p.pmu.Unlock()
		if ch == nil {
			continue // answered after its call gave up, or an id never sent
		}
		switch {
		case a.Error != nil:
			ch <- procAnswer{errMsg: a.Error}
		case a.Result != nil:
			ch <- procAnswer{result: a.Result}
		default:
			ch <- procAnswer{result: json.RawMessage("null")}
		}
	}
	p.wmu.Lock()
	p.stdin.Close()
	p.wmu.Unlock()
	werr := p.cmd.Wait()
	if werr == nil {
		werr = errors.New("exited")
	}
	p.pmu.Lock()
	p.err = werr
	close(p.dead)
	pending := p.pending
	p.pending = map[uint64]chan procAnswer{}
	p.pmu.Unlock()
	for _, ch := range pending {
		ch <- procAnswer{err: p.deathError()}
	}
	onDeath()
}

func (p *proc) isDead() bool {
	select {
	case <-p.dead:
		return true
	default:
		return false
	}
}

func (p *proc) forget(id uint64) {
	p.pmu.Lock()
	delete(p.pending, id)
	p.pmu.Unlock()
}

// deathError says how the process ended, with its last stderr (after dead closed).
func (p *proc) deathError() error {
	msg := fmt.Sprintf("the dispatch command died (%v) with the call in flight", p.err)
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		msg += "; its stderr ends: " + s
	}
	return errors.New(msg)
}

// close ends the process: its stdin closes, and it is killed if it has
// not exited within a second.
func (d *procDispatch) close() {
	d.mu.Lock()
	d.closed = true
	p := d.cur
	d.mu.Unlock()
	if p == nil {
		return
	}
	p.wmu.Lock()
	p.stdin.Close()
	p.wmu.Unlock()
	select {
	case <-p.dead:
	case <-time.After(time.Second):
		p.cmd.Process.Kill()
		<-p.dead
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
