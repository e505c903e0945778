package remote

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/codemode-go/codemode/internal/gopool"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// peer is the daemon's end of one program's stream: it sends the
// program's calls (sends are serialized) and hands each answer to the call
// waiting for it. An answer for an id no call waits on (unknown, or one
// whose call gave up) is dropped.
type peer struct {
	stream  pb.Executor_ProgramServer
	metrics *Metrics
	out     chan outgoing // to write, the one goroutine that sends on the stream
	grace   time.Duration // how long a reply waits for a client that does not read

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan *pb.Answer
	first   chan received // the stream's first message (its start), or why it ended before one
	gone    chan struct{} // the client stopped sending (or broke the stream)
	done    chan struct{}
	control chan *pb.ClientMessage // Invoke, LogsRequest, Release (a retained sandbox's)
	sent    atomic.Int64           // calls whose Call message has gone out (or failed to)
	prop    propagation.TextMapPropagator
}

// received is a message the reader received, or why it could not.
type received struct {
	m   *pb.ClientMessage
	err error
}

// outgoing is one message for write, and where it says how its Send went.
type outgoing struct {
	m    *pb.ServerMessage
	sent chan error
}

// flush waits, a bounded time, until the calls the run started (n, its
// HostCalls) have had their Call messages sent: a call the program did
// not await starts on a goroutine of its own, and its Call must reach the
// client before the Result does, as in process it enters the dispatch
// before Execute returns.
func (p *peer) flush(n int64) {
	if p == nil {
		return // a Standalone program: no calls
	}
	for limit := time.Now().Add(time.Second); p.sent.Load() < n && time.Now().Before(limit); {
		time.Sleep(20 * time.Microsecond)
	}
}

func newPeer(stream pb.Executor_ProgramServer, metrics *Metrics, grace time.Duration) *peer {
	p := &peer{stream: stream, metrics: metrics, out: make(chan outgoing), grace: grace, pending: map[uint64]chan *pb.Answer{},
		first: make(chan received, 1), gone: make(chan struct{}), done: make(chan struct{}), control: make(chan *pb.ClientMessage, 16)}
	gopool.Go(p.write)
	return p
}

// write sends the messages, in order, until the program ends. A client
// that does not read leaves it blocked in Send (gRPC's flow control); the
// handler's return ends the stream, and with it that Send.
func (p *peer) write() {
	for {
		select {
		case o := <-p.out:
			p.metrics.moved("out", o.m, 0)
			o.sent <- p.stream.Send(o.m)
		case <-p.done:
			return
		}
	}
}

// errNotRead is a message the client did not take in time.
var errNotRead = errors.New("the client is not reading the stream")

// send sends m, waiting no longer than ctx or limit (nil: no limit): a
// message still waiting then may yet go out, but no one waits for it.
func (p *peer) send(ctx context.Context, limit <-chan time.Time, m *pb.ServerMessage) error {
	o := outgoing{m, acks.Get().(chan error)}
	select {
	case p.out <- o:
	case <-ctx.Done():
		return errNotRead
	case <-limit:
		return errNotRead
	case <-p.done:
		return errNoAnswer
	}
	select {
	case err := <-o.sent:
		acks.Put(o.sent)
		return err
	case <-ctx.Done():
	case <-limit:
	}
	return errNotRead // o.sent is write's now: not put back
}

// acks are the channels write answers a send on (one message each,
// buffered, so write never waits on a caller that gave up).
var acks = sync.Pool{New: func() any { return make(chan error, 1) }}

// reply sends one of the daemon's own messages (a result, a retained
// sandbox's replies), waiting at most the grace for a client that does
// not read, or until ctx ends; past it the stream is to end.
func (p *peer) reply(ctx context.Context, m *pb.ServerMessage) error {
	t := time.NewTimer(p.grace)
	defer t.Stop()
	err := p.send(ctx, t.C, m)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	case errors.Is(err, errNotRead):
		return status.Errorf(codes.DeadlineExceeded, "the client did not read the daemon's reply within %v", p.grace)
	}
	return err
}

// receive reads the stream until it ends: the first message (the start)
// goes to the handler, then answers to their calls, and a retained
// sandbox's requests to control.
func (p *peer) receive() {
	defer close(p.gone)
	for started := false; ; started = true {
		m, err := p.stream.Recv()
		if err != nil {
			if !started {
				p.first <- received{err: err} // buffered: the handler may have stopped waiting
			}
			return
		}
		p.metrics.moved("in", m, 0)
		if !started {
			p.first <- received{m: m}
			continue
		}
		a := m.GetAnswer()
		if a == nil {
			if m.GetInvoke() != nil || m.GetLogs() != nil || m.GetRelease() != nil {
				select {
				case p.control <- m:
				case <-p.done:
					return
				}
			}
			continue // a second start, or an empty message: nothing to do
		}
		p.mu.Lock()
		ch := p.pending[a.Id]
		delete(p.pending, a.Id)
		p.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

func (p *peer) stop() { close(p.done) }

// errNoAnswer is a call the client can no longer answer.
var errNoAnswer = errors.New("the client went away before answering the call")

// call sends one call and waits for its answer.
func (p *peer) call(ctx context.Context, c *pb.Call) (*pb.Answer, error) {
	ch := make(chan *pb.Answer, 1)
	if p.prop != nil {
		carrier := propagation.MapCarrier{}
		p.prop.Inject(ctx, carrier)
		c.Trace = headerSafe(carrier)
	}
	p.mu.Lock()
	p.next++
	c.Id = p.next
	p.pending[c.Id] = ch
	p.mu.Unlock()
	forget := func() {
		p.mu.Lock()
		delete(p.pending, c.Id)
		p.mu.Unlock()
	}
	err := p.send(ctx, nil, &pb.ServerMessage{Msg: &pb.ServerMessage_Call{Call: c}})
	p.sent.Add(1)
	if err != nil {
		forget()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errNoAnswer
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-p.gone:
		forget()
		return nil, errNoAnswer
	}
}

// dispatch is the program's DispatchFunc: the call travels to the client,
// its names and arguments byte for byte (a name the program made with a
// lone surrogate is not UTF-8), and so does the answer.
func (p *peer) dispatch(ctx context.Context, provider, tool, argsJSON string) (string, error) {
	a, err := p.call(ctx, &pb.Call{Provider: []byte(provider), Tool: []byte(tool), ArgsJson: []byte(argsJSON)})
	if err != nil {
		return "", err
	}
	switch o := a.Outcome.(type) {
	case *pb.Answer_Envelope:
		return string(o.Envelope), nil
	case *pb.Answer_Failure:
		return "", errors.New(string(o.Failure))
	case *pb.Answer_ResultJson:
		return `{"result":` + string(o.ResultJson) + `}`, nil
	}
	return "", errors.New("the client answered the call with nothing")
}

// capability serves a Run script's capability call through the client.
func (p *peer) capability(ctx context.Context, name string, args json.RawMessage) (any, error) {
	a, err := p.call(ctx, &pb.Call{Tool: []byte(name), ArgsJson: args, Capability: true})
	if err != nil {
		return nil, err
	}
	switch o := a.Outcome.(type) {
	case *pb.Answer_ResultJson:
		// The executor checks it as it checks any capability's JSON: a
		// client's answer that is not JSON fails as it would in process.
		return json.RawMessage(o.ResultJson), nil
	case *pb.Answer_Failure:
		return nil, errors.New(string(o.Failure))
	}
	return nil, errors.New("the client answered the capability call with no result")
}

type peerKey struct{}

func withPeer(ctx context.Context, p *peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

func peerOf(ctx context.Context) *peer {
	p, _ := ctx.Value(peerKey{}).(*peer)
	return p
}
