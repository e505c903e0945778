package remote_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// FuzzDaemonFrames: any two frames a client sends on a program's stream
// (protobuf or not, in any order) end that stream within bounds, with a
// status that says what was wrong (or a Result for a program that ran),
// every frame the daemon sends back is a ServerMessage, and the daemon
// serves the next program.
func FuzzDaemonFrames(f *testing.F) {
	frame := func(m *pb.ClientMessage) []byte { return marshal(f, m) }
	start := func(s *pb.Start) []byte { return frame(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: s}}) }
	answer := func(a *pb.Answer) []byte { return frame(&pb.ClientMessage{Msg: &pb.ClientMessage_Answer{Answer: a}}) }
	call := start(&pb.Start{Code: "async () => await s.get(1)", Providers: []*pb.Provider{{Name: "s", Tools: []string{"get"}}}})
	for _, s := range [][2][]byte{
		{start(&pb.Start{Code: "async () => 1"}), nil},
		{call, answer(&pb.Answer{Id: 1, Outcome: &pb.Answer_Envelope{Envelope: `{"result":2}`}})},
		{call, answer(&pb.Answer{Id: 99, Outcome: &pb.Answer_Failure{Failure: "no"}})},
		{call, answer(&pb.Answer{Id: 1, Outcome: &pb.Answer_ResultJson{ResultJson: "not json"}})},
		{answer(&pb.Answer{Id: 1}), nil},
		{start(&pb.Start{Code: "return 1", Mode: pb.Start_MODE_RUN, Capabilities: []*pb.Capability{{Name: "c", ParamsJson: "{"}}}), nil},
		{start(&pb.Start{Code: "async () => 1", Limits: &pb.Limits{Memory: -1, DeadlineMs: 1 << 40}}), nil},
		{start(&pb.Start{Code: "async () => 1", Providers: []*pb.Provider{{Name: "console"}}}), nil},
		{start(&pb.Start{Code: "async () => 1"}), start(&pb.Start{Code: "async () => 2"})},
		{frame(&pb.ClientMessage{Msg: &pb.ClientMessage_Invoke{Invoke: &pb.Invoke{Id: 1}}}), nil},
		{frame(&pb.ClientMessage{Msg: &pb.ClientMessage_Release{Release: &pb.Release{}}}), nil},
		{start(&pb.Start{Code: "async () => await s.w(1)", Providers: []*pb.Provider{{Name: "s"}},
			Governance: &pb.Governance{Tools: map[string]*pb.ToolPolicy{"s.w": {RequiresApproval: true}}, TtlMs: 1}}), nil},
		{start(&pb.Start{Code: "async () => 1", Governance: &pb.Governance{Tools: map[string]*pb.ToolPolicy{"*": {Budget: -1, TimeoutNs: -5}}}}), nil},
		{start(&pb.Start{Resume: &pb.Resume{Body: []byte("not a body"), Approve: true}, Governance: &pb.Governance{}}), nil},
		{start(&pb.Start{Mode: pb.Start_MODE_RUN, Governance: &pb.Governance{}, Resume: &pb.Resume{Approve: true, ArgsJson: "{",
			Body: []byte(`{"v":1,"mode":"run","code":"return 1","expires":99999999999,"calls":[{"tool":"t","args":"{}"}],"pending":0}`)}}), nil},
		{[]byte{0xff, 0xff, 0xff}, nil}, {[]byte("garbage"), []byte{0x0a, 0x80}}, {nil, nil},
	} {
		f.Add(s[0], s[1])
	}
	addr, _ := daemon(f, remote.ServerOptions{Max: codemode.Limits{Memory: 16 << 20, Deadline: 2 * time.Second}}) // room for the check program on a loaded machine
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	client := dial(f, addr)
	f.Fuzz(func(t *testing.T, first, second []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
			"/codemode.remote.v1.Executor/Program", grpc.ForceCodec(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, fr := range [][]byte{first, second} {
			if fr != nil && cs.SendMsg(fr) != nil {
				break // the daemon already ended the stream
			}
		}
		cs.CloseSend()
		var ended error
		for {
			var reply []byte
			if ended = cs.RecvMsg(&reply); ended != nil {
				break
			}
			var m pb.ServerMessage
			if err := proto.Unmarshal(reply, &m); err != nil || m.Msg == nil {
				t.Fatalf("frames %x, %x: the daemon sent %x, no ServerMessage (%v)", first, second, reply, err)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("frames %x, %x: the stream did not end", first, second)
		}
		if !errors.Is(ended, io.EOF) {
			st := status.Convert(ended)
			switch st.Code() {
			case codes.InvalidArgument, codes.Internal, codes.ResourceExhausted, codes.FailedPrecondition, codes.Canceled, codes.DeadlineExceeded:
				if st.Message() == "" {
					t.Fatalf("frames %x, %x: %v without a message", first, second, st.Code())
				}
			default:
				t.Fatalf("frames %x, %x: the stream ended with %v", first, second, ended)
			}
		}
		res := client.Execute(context.Background(), codemode.Request{Code: "async () => 'still here'"})
		if res.Error != "" || string(res.Result) != `"still here"` {
			t.Fatalf("after frames %x, %x the daemon does not serve: %+v", first, second, res)
		}
	})
}

// FuzzDaemonStandalone: any bytes a client sends as a Standalone request
// (protobuf or not) get a Result or a status that says what was wrong,
// within bounds, and the daemon serves the next program.
func FuzzDaemonStandalone(f *testing.F) {
	start := func(s *pb.Start) []byte { return marshal(f, s) }
	for _, s := range [][]byte{
		start(&pb.Start{Code: "async () => 1"}),
		start(&pb.Start{Code: "return 1", Mode: pb.Start_MODE_RUN}),
		start(&pb.Start{Code: "async () => await s.get(1)", Providers: []*pb.Provider{{Name: "s", Tools: []string{"get"}}}}),
		start(&pb.Start{Code: "return 1", Mode: pb.Start_MODE_RUN, Capabilities: []*pb.Capability{{Name: "c", ParamsJson: "{"}}}),
		start(&pb.Start{Code: "async () => 1", Limits: &pb.Limits{Memory: -1, DeadlineMs: 1 << 40}}),
		start(&pb.Start{Code: "async () => 1", Limits: &pb.Limits{Memory: 1 << 40}, RequireLimits: true}),
		start(&pb.Start{Code: "async () => { for (;;) {} }", Limits: &pb.Limits{DeadlineMs: 10}}),
		start(&pb.Start{Code: "async () => 1", RetainHandles: true}),
		start(&pb.Start{Code: "async () => 1", Governance: &pb.Governance{Tools: map[string]*pb.ToolPolicy{"*": {Budget: -1, TimeoutNs: -5}}}}),
		start(&pb.Start{Resume: &pb.Resume{Body: []byte("not a body"), Approve: true}}),
		start(&pb.Start{Code: "async () => 1", Trace: map[string]string{"traceparent": "00-zz-zz-01"}}),
		{0xff, 0xff, 0xff}, []byte("garbage"), nil,
	} {
		f.Add(s)
	}
	addr, _ := daemon(f, remote.ServerOptions{Max: codemode.Limits{Memory: 16 << 20, Deadline: 2 * time.Second}})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	client := dial(f, addr)
	f.Fuzz(func(t *testing.T, req []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var reply []byte
		err := conn.Invoke(ctx, pb.Executor_Standalone_FullMethodName, req, &reply, grpc.ForceCodec(rawCodec{}))
		if ctx.Err() != nil {
			t.Fatalf("request %x: no answer", req)
		}
		if err == nil {
			var res pb.Result
			if err := proto.Unmarshal(reply, &res); err != nil || res.Limits == nil {
				t.Fatalf("request %x: the daemon answered %x, no Result (%v)", req, reply, err)
			}
		} else {
			st := status.Convert(err)
			switch st.Code() {
			case codes.InvalidArgument, codes.Internal, codes.ResourceExhausted, codes.FailedPrecondition:
				if st.Message() == "" {
					t.Fatalf("request %x: %v without a message", req, st.Code())
				}
			default:
				t.Fatalf("request %x: %v", req, err)
			}
		}
		res := client.Execute(context.Background(), codemode.Request{Code: "async () => 'still here'"})
		if res.Error != "" || string(res.Result) != `"still here"` {
			t.Fatalf("after request %x the daemon does not serve: %+v", req, res)
		}
	})
}

// marshal is m's protobuf encoding.
func marshal(tb testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
