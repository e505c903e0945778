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
	"syscall"
	"time"
)

// procDispatch serves tool calls through a subprocess speaking one JSON
// object per line: {"id","provider","tool","args"} on its stdin, and
// {"id","result"} or {"id","error"} on its stdout, in any order (calls in
// flight are matched by id).
//
// Readiness: the first line a started process reads is a ping, a call of
// id 0 ({"id":0,"provider":"codemode","tool":"ping","args":[]}), and the
// process is ready when it has answered it (a result or an error, any
// value: a program that answers a tool it does not have with an error
// needs no change). No call is sent before; a process that does not
// answer within the start timeout is killed.
//
// Restarts: when the process dies, the calls in flight fail saying so,
// and so does every call until it is ready again (a call never waits for
// a restart under its run's deadline). The next job to start restarts it,
// after a backoff while it keeps dying (100 ms to 5 s; back to 100 ms once
// a process served a call or lived 10 s), and starts once it is ready
// (hold).
//
// The process runs in a process group of its own, killed with it when
// the process ends (whatever it left behind), when it misses its start
// timeout, and at close; every wait on it is bounded, so a grandchild
// holding its pipes keeps nothing waiting.
type procDispatch struct {
	command      string
	startTimeout time.Duration

	mu      sync.Mutex
	cur     *proc // the latest process: starting, ready or dead
	nextID  uint64
	backoff time.Duration
	retry   time.Time // no start before this
	closed  bool
}

type proc struct {
	cmd     *exec.Cmd
	stdin   *os.File // our end of its stdin
	stdout  *os.File // our end of its stdout
	errOut  *os.File // our end of its stderr
	started time.Time
	wmu     sync.Mutex // writes to stdin
	pmu     sync.Mutex // pending, err, late, served
	pending map[uint64]chan procAnswer
	ready   chan struct{} // closed when it answered the ping
	dead    chan struct{} // closed once it ended, its group was killed and its calls failed
	stderr  *tail
	err     error // why it died
	late    bool  // killed for not answering the ping in time
	reaped  bool  // waited for and its group killed: its pid may be reused
	served  bool  // it answered a call (not the ping)
	timer   *time.Timer
	once    sync.Once // ready
}

type procAnswer struct {
	result json.RawMessage
	errMsg *string
	err    error
}

// pingID is the ping's id; calls count from 1.
const pingID = 0

// pingLine is the ping a started process reads first.
const pingLine = `{"id":0,"provider":"codemode","tool":"ping","args":[]}` + "\n"

// procGrace is how long a process gets to exit once its stdin closed or
// its stdout ended (then it is killed), and how long its pipes may stay
// open after it exited and its group was killed (held by a process that
// left the group) before they are closed.
const procGrace = 2 * time.Second

// defaultStartTimeout is --dispatch-start-timeout's default.
const defaultStartTimeout = 30 * time.Second

func newProcDispatch(command string, startTimeout time.Duration) *procDispatch {
	if startTimeout <= 0 {
		startTimeout = defaultStartTimeout
	}
	return &procDispatch{command: command, startTimeout: startTimeout}
}

// open starts the process and waits until it is ready (its ping
// answered) or failed: the command's setup, before the first job.
func (d *procDispatch) open(ctx context.Context) error {
	d.mu.Lock()
	p, err := d.start()
	if err == nil {
		d.cur = p
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("--dispatch-cmd: %v", err)
	}
	select {
	case <-p.ready:
		return nil
	case <-p.dead:
		return fmt.Errorf("--dispatch-cmd: %v", p.startError())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hold returns once the process is ready: at once when it is, else after
// (re)starting it. A process that fails to start is reported (the job's
// calls will fail saying the tool server is down). It waits outside any
// run's deadline: a job calls it before it starts. Each start is bounded
// by the start timeout, the backoff before it by 5 s.
func (d *procDispatch) hold(ctx context.Context) error {
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return errors.New("the dispatch command is shut down")
		}
		p := d.cur
		if p == nil || p.isDead() {
			if wait := time.Until(d.retry); wait > 0 {
				d.mu.Unlock()
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				}
				continue
			}
			var err error
			if p, err = d.start(); err != nil {
				d.mu.Unlock()
				return err
			}
			d.cur = p
		}
		d.mu.Unlock()
		select {
		case <-p.ready:
			return nil
		case <-p.dead:
			if !p.wasReady() {
				return p.startError()
			}
			// It served and died since: start another.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// call sends one call and waits for its answer, the process's death or
// ctx. A process that is not ready (it died, or is restarting) fails the
// call at once.
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

// send writes a call to the ready process.
func (d *procDispatch) send(ctx context.Context, provider, tool, args string) (*proc, uint64, chan procAnswer, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, 0, nil, errors.New("the dispatch command is shut down")
	}
	p := d.cur
	if p == nil || p.isDead() || !p.wasReady() {
		d.mu.Unlock()
		return nil, 0, nil, downError(p)
	}
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
	if n, err := p.write(ctx, append(line, '\n')); err != nil {
		p.forget(id)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, 0, nil, fmt.Errorf("the dispatch command read none of the call before the deadline: %w", context.DeadlineExceeded)
		}
		<-p.dead // bounded: a failed write killed it
		return nil, 0, nil, p.deathError()
	}
	return p, id, ch, nil
}

// downError is a call's failure while the tool server is not ready.
func downError(p *proc) error {
	if p == nil {
		return errors.New("the tool server is down: the dispatch command is not started")
	}
	if p.isDead() {
		msg := fmt.Sprintf("the tool server went down: the dispatch command %v; the call was not sent (it is restarted before the next job starts)", p.why())
		if s := strings.TrimSpace(p.stderr.String()); s != "" {
			msg += "; its stderr ends: " + s
		}
		return errors.New(msg)
	}
	return errors.New("the tool server went down: the dispatch command is restarting; the call was not sent")
}

// write writes a line to the process's stdin by ctx's deadline (none:
// no bound; closing stdin ends the wait). The deadline is read again when
// it passes while ctx lives: a run whose queue waits are not its time
// (codemode.WithQueueTimeout) moves it later. A line written in part
// breaks the stream: the process is killed.
func (p *proc) write(ctx context.Context, line []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	written := 0
	for {
		deadline, _ := ctx.Deadline()
		p.stdin.SetWriteDeadline(deadline)
		n, err := p.stdin.Write(line[written:])
		written += n
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
			if d, _ := ctx.Deadline(); d.After(deadline) {
				continue
			}
		}
		if err != nil && (written > 0 || !errors.Is(err, os.ErrDeadlineExceeded)) {
			p.kill()
		}
		return written, err
	}
}

// start runs the command and sends it the ping (d.mu held).
func (d *procDispatch) start() (*proc, error) {
	p := &proc{pending: map[uint64]chan procAnswer{}, ready: make(chan struct{}), dead: make(chan struct{}), stderr: &tail{max: 2048}}
	// All three pipes are ours (no copying goroutine of exec's for Wait
	// to wait on): run reads them to their end, closing them after
	// procGrace should a process outside the group hold them.
	var fds [6]*os.File // in, out, err: the child's end, then ours
	for i := 0; i < 3; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(fds[:])
			return nil, err
		}
		if i == 0 {
			fds[i], fds[3+i] = r, w
		} else {
			fds[i], fds[3+i] = w, r
		}
	}
	cmd := exec.Command("/bin/sh", "-c", d.command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = fds[0], fds[1], fds[2]
	cmd.WaitDelay = procGrace // a guard: Wait has no I/O of its own to wait for
	err := cmd.Start()
	closeFiles(fds[:3])
	if err != nil {
		closeFiles(fds[3:])
		d.died(false)
		return nil, fmt.Errorf("the dispatch command does not start: %v", err)
	}
	p.cmd, p.stdin, p.stdout, p.errOut, p.started = cmd, fds[3], fds[4], fds[5], time.Now()
	timeout := d.startTimeout
	p.timer = time.AfterFunc(timeout, func() {
		p.pmu.Lock()
		late := !p.wasReady() && !p.reaped
		if late {
			p.late = true
		}
		p.pmu.Unlock()
		if late {
			p.kill()
		}
	})
	go p.run(timeout, func(healthy bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.died(healthy)
	})
	wctx, cancel := context.WithDeadline(context.Background(), p.started.Add(timeout))
	p.write(wctx, []byte(pingLine)) // a failure kills it: run reports the death
	cancel()
	return p, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// died schedules the next start after a backoff that grows while the
// process keeps dying unhealthy (before it served a call and within 10 s)
// (d.mu held).
func (d *procDispatch) died(healthy bool) {
	if healthy || d.backoff == 0 {
		d.backoff = 100 * time.Millisecond
	} else {
		d.backoff = min(2*d.backoff, 5*time.Second)
	}
	d.retry = time.Now().Add(d.backoff)
}

// run follows the process to its end: it ended when its stdout ended or
// it exited, whichever first (the other within procGrace, or it is
// killed). Then its group is killed (whatever it left behind), its
// stdout and stderr are read to their end (within procGrace: a process
// that left the group may hold them), the pipes closed, and the calls in
// flight fail.
func (p *proc) run(startTimeout time.Duration, onDeath func(healthy bool)) {
	read := make(chan struct{})
	go func() {
		p.read()
		close(read)
	}()
	copied := make(chan struct{})
	go func() {
		io.Copy(p.stderr, p.errOut)
		close(copied)
	}()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	var werr error
	select {
	case <-read: // it closed its stdout: it is exiting
		t := time.NewTimer(procGrace)
		select {
		case werr = <-exited:
		case <-t.C:
			p.kill()
			werr = <-exited
		}
		t.Stop()
	case werr = <-exited:
	}
	p.kill()
	grace := make(chan struct{})
	t := time.AfterFunc(procGrace, func() { close(grace) })
	for _, c := range []chan struct{}{read, copied} {
		select {
		case <-c:
		case <-grace:
		}
	}
	t.Stop()
	closeFiles([]*os.File{p.stdout, p.errOut, p.stdin})
	<-read
	<-copied
	p.timer.Stop()
	if werr == nil || errors.Is(werr, exec.ErrWaitDelay) {
		werr = errors.New("exited")
	}
	p.pmu.Lock()
	p.reaped = true
	if p.late {
		werr = fmt.Errorf("did not answer its ping within %v (--dispatch-start-timeout)", startTimeout)
	}
	p.err = werr
	close(p.dead)
	pending := p.pending
	p.pending = map[uint64]chan procAnswer{}
	healthy := p.served || time.Since(p.started) > 10*time.Second
	p.pmu.Unlock()
	for _, ch := range pending {
		ch <- procAnswer{err: p.deathError()}
	}
	onDeath(healthy)
}

// kill kills the process's group (and the process, should it have left
// it), unless it is over.
func (p *proc) kill() {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if p.reaped {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.cmd.Process.Kill()
}

// read delivers the answers until stdout ends (or is closed).
func (p *proc) read() {
	sc := bufio.NewScanner(p.stdout)
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
		if *a.ID == pingID {
			p.once.Do(func() { close(p.ready) })
			continue
		}
		p.pmu.Lock()
		ch := p.pending[*a.ID]
		delete(p.pending, *a.ID)
		p.served = true
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
}

func (p *proc) isDead() bool {
	select {
	case <-p.dead:
		return true
	default:
		return false
	}
}

func (p *proc) wasReady() bool {
	select {
	case <-p.ready:
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

// why is how the process ended (after dead closed): "died (exit status
// 3)", or that it missed its start timeout.
func (p *proc) why() string {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if p.late {
		return p.err.Error()
	}
	return fmt.Sprintf("died (%v)", p.err)
}

// deathError says how the process ended, with its last stderr (after dead closed).
func (p *proc) deathError() error {
	msg := fmt.Sprintf("the tool server went down: the dispatch command died (%v) with the call in flight", p.err)
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		msg += "; its stderr ends: " + s
	}
	return errors.New(msg)
}

// startError says why a process ended before it was ready (after dead
// closed).
func (p *proc) startError() error {
	msg := "the dispatch command " + p.why()
	p.pmu.Lock()
	late := p.late
	p.pmu.Unlock()
	if !late {
		msg += " before it was ready (it answers a ping, id 0, first)"
	}
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		msg += "; its stderr ends: " + s
	}
	return errors.New(msg)
}

// close ends the process: its stdin closes, and its group is killed once
// it exited or after procGrace; close returns when it is dead (bounded).
func (d *procDispatch) close() {
	d.mu.Lock()
	d.closed = true
	p := d.cur
	d.mu.Unlock()
	if p == nil {
		return
	}
	p.stdin.Close()
	t := time.NewTimer(procGrace)
	defer t.Stop()
	select {
	case <-p.dead:
	case <-t.C:
		p.kill()
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
