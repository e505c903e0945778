package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codemode-go/codemode"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// remoteRetained is a retained sandbox on the daemon, served over the
// program's stream (a codemode.RetainedBackend).
type remoteRetained struct {
	stream pb.Executor_ProgramClient
	send   func(*pb.ClientMessage) error
	cancel context.CancelFunc

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan *pb.ServerMessage
	done    chan struct{}
	err     error
	once    sync.Once
}

func newRemoteRetained(stream pb.Executor_ProgramClient, send func(*pb.ClientMessage) error, cancel context.CancelFunc) *remoteRetained {
	r := &remoteRetained{stream: stream, send: send, cancel: cancel, pending: map[uint64]chan *pb.ServerMessage{}, done: make(chan struct{})}
	go r.read()
	return r
}

// read hands each reply to its request until the stream ends.
func (r *remoteRetained) read() {
	for {
		m, err := r.stream.Recv()
		if err != nil {
			r.finish(fmt.Errorf("%w: the daemon's stream ended: %v", codemode.ErrRetainedClosed, err))
			return
		}
		var id uint64
		switch msg := m.Msg.(type) {
		case *pb.ServerMessage_InvokeResult:
			id = msg.InvokeResult.Id
		case *pb.ServerMessage_Logs:
			id = msg.Logs.Id
		case *pb.ServerMessage_Closed:
			err := codemode.ErrRetainedClosed
			switch {
			case msg.Closed.Err != nil:
				err = fromPBError(msg.Closed.Err, nil)
			case len(msg.Closed.Error) > 0:
				err = fmt.Errorf("%w: %s", codemode.ErrRetainedClosed, msg.Closed.Error)
			}
			r.finish(err)
			return
		default:
			continue
		}
		r.mu.Lock()
		ch := r.pending[id]
		delete(r.pending, id)
		r.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (r *remoteRetained) finish(err error) {
	r.once.Do(func() {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
		close(r.done)
		r.cancel()
	})
}

// request sends a message naming a fresh id and waits for its reply.
func (r *remoteRetained) request(ctx context.Context, msg func(id uint64) *pb.ClientMessage) (*pb.ServerMessage, error) {
	ch := make(chan *pb.ServerMessage, 1)
	r.mu.Lock()
	r.next++
	id := r.next
	r.pending[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
	}()
	select {
	case <-r.done:
		return nil, r.Err()
	default:
	}
	if err := r.send(msg(id)); err != nil {
		return nil, fmt.Errorf("%w: %v", codemode.ErrRetainedClosed, err)
	}
	select {
	case m := <-ch:
		return m, nil
	case <-r.done:
		return nil, r.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Call invokes a handle on the daemon.
func (r *remoteRetained) Call(ctx context.Context, h codemode.Handle, args []any) (any, error) {
	hj, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	aj, err := codemode.StringifyForDispatch(args)
	if err != nil {
		return nil, fmt.Errorf("codemode: retained call: %w", err)
	}
	m, err := r.request(ctx, func(id uint64) *pb.ClientMessage {
		return &pb.ClientMessage{Msg: &pb.ClientMessage_Invoke{Invoke: &pb.Invoke{Id: id, HandleJson: hj, ArgsJson: []byte(aj)}}}
	})
	if err != nil {
		return nil, err
	}
	res := m.GetInvokeResult()
	if res.Err != nil { // the sandbox's ExecError whole: ErrRetainedClosed among its matches when it closed
		return nil, fromPBError(res.Err, nil)
	}
	if len(res.Error) > 0 {
		var err error = errors.New(string(res.Error))
		if len(res.ErrorJson) > 0 { // a daemon that predates err
			ee := &codemode.ExecError{}
			if json.Unmarshal(res.ErrorJson, ee) == nil && ee.Kind != "" {
				err = ee
			}
		}
		if res.Closed {
			err = fmt.Errorf("%w (%w)", err, codemode.ErrRetainedClosed)
		}
		return nil, err
	}
	return codemode.ParseForDispatch(string(res.ValueJson))
}

// Logs returns the sandbox's console lines since the last Logs.
func (r *remoteRetained) Logs() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := r.request(ctx, func(id uint64) *pb.ClientMessage {
		return &pb.ClientMessage{Msg: &pb.ClientMessage_Logs{Logs: &pb.LogsRequest{Id: id}}}
	})
	if err != nil {
		return nil
	}
	return texts(m.GetLogs().Logs)
}

// Close releases the sandbox and waits for the daemon to say it is gone.
func (r *remoteRetained) Close() error {
	r.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Release{Release: &pb.Release{}}})
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.finish(codemode.ErrRetainedClosed)
	}
	return nil
}

// Done is closed once the sandbox is gone.
func (r *remoteRetained) Done() <-chan struct{} { return r.done }

// Err says why it closed, nil while it lives.
func (r *remoteRetained) Err() error {
	select {
	case <-r.done:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.err
	default:
		return nil
	}
}

var _ codemode.RetainedBackend = (*remoteRetained)(nil)
