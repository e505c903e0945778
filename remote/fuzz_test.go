package remote_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
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

// hostileTexts are texts that are not UTF-8 (a lone surrogate as the engine
// writes it, stray bytes), NUL, U+FFFF and 10 KB, for the fuzz targets'
// seeds: every text field of the wire carries them.
var hostileTexts = []string{"\xed\xa0\x80", "a\x00b", "\uffff\ufffe", "\xff\xfe\xe2\x82", strings.Repeat("\u00e9", 5<<10) + "\xed\xb0\x80"}

// hostileJS is a JavaScript string expression for each of hostileTexts'
// kinds: lone surrogates, NUL, U+FFFF, 10 KB.
var hostileJS = []string{`"\uD800"`, `"a\u0000b"`, `"\uFFFF\uFFFE"`, `"\uDC00\uD800"`, `"\u00e9".repeat(5 * 1024) + "\uDC00"`}

// statusOK says a status ending a fuzzed stream or call says what was
// wrong: a code the daemon refuses with, and a message. INTERNAL only for
// a frame that is no message (gRPC's "failed to unmarshal"): the daemon
// itself never fails so (once, text that was not UTF-8 did, "error while
// marshaling").
func statusOK(st *status.Status, codes_ ...codes.Code) bool {
	if st.Message() == "" {
		return false
	}
	if st.Code() == codes.Internal {
		return strings.Contains(st.Message(), "unmarshal")
	}
	return slices.Contains(codes_, st.Code())
}

// FuzzDaemonFrames: any two frames a client sends on a program's stream
// (protobuf or not, in any order) end that stream within bounds, with a
// status that says what was wrong (or a Result for a program that ran),
// every frame the daemon sends back is a ServerMessage, and the daemon
// serves the next program. The seeds carry hostile text in every field
// that holds text, for the fuzzer to vary.
func FuzzDaemonFrames(f *testing.F) {
	frame := func(m *pb.ClientMessage) []byte { return marshal(f, m) }
	start := func(s *pb.Start) []byte { return frame(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: s}}) }
	answer := func(a *pb.Answer) []byte { return frame(&pb.ClientMessage{Msg: &pb.ClientMessage_Answer{Answer: a}}) }
	call := start(&pb.Start{Code: []byte("async () => await s.get(1)"), Providers: []*pb.Provider{{Name: []byte("s"), Tools: [][]byte{[]byte("get")}}}})
	for _, s := range [][2][]byte{
		{start(&pb.Start{Code: []byte("async () => 1")}), nil},
		{call, answer(&pb.Answer{Id: 1, Outcome: &pb.Answer_Envelope{Envelope: []byte(`{"result":2}`)}})},
		{call, answer(&pb.Answer{Id: 99, Outcome: &pb.Answer_Failure{Failure: []byte("no")}})},
		{call, answer(&pb.Answer{Id: 1, Outcome: &pb.Answer_ResultJson{ResultJson: []byte("not json")}})},
		{answer(&pb.Answer{Id: 1}), nil},
		{start(&pb.Start{Code: []byte("return 1"), Mode: pb.Start_MODE_RUN, Capabilities: []*pb.Capability{{Name: []byte("c"), ParamsJson: []byte("{")}}}), nil},
		{start(&pb.Start{Code: []byte("async () => 1"), Limits: &pb.Limits{Memory: -1, DeadlineMs: 1 << 40}}), nil},
		{start(&pb.Start{Code: []byte("async () => 1"), Providers: []*pb.Provider{{Name: []byte("console")}}}), nil},
		{start(&pb.Start{Code: []byte("async () => 1")}), start(&pb.Start{Code: []byte("async () => 2")})},
		{frame(&pb.ClientMessage{Msg: &pb.ClientMessage_Invoke{Invoke: &pb.Invoke{Id: 1}}}), nil},
		{frame(&pb.ClientMessage{Msg: &pb.ClientMessage_Release{Release: &pb.Release{}}}), nil},
		{start(&pb.Start{Code: []byte("async () => await s.w(1)"), Providers: []*pb.Provider{{Name: []byte("s")}},
			Governance: &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: []byte("s.w"), Policy: &pb.ToolPolicy{RequiresApproval: true}}}, TtlMs: 1}}), nil},
		{start(&pb.Start{Code: []byte("async () => 1"), Governance: &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: []byte("*"), Policy: &pb.ToolPolicy{Budget: -1, TimeoutNs: -5}}}}}), nil},
		{start(&pb.Start{Resume: &pb.Resume{Body: []byte("not a body"), Approve: true}, Governance: &pb.Governance{}}), nil},
		{start(&pb.Start{Mode: pb.Start_MODE_RUN, Governance: &pb.Governance{}, Resume: &pb.Resume{Approve: true, ArgsJson: []byte("{"),
			Body: []byte(`{"v":1,"mode":"run","code":"return 1","expires":99999999999,"calls":[{"tool":"t","args":"{}"}],"pending":0}`)}}), nil},
		{[]byte{0xff, 0xff, 0xff}, nil}, {[]byte("garbage"), []byte{0x0a, 0x80}}, {nil, nil},
	} {
		f.Add(s[0], s[1])
	}
	for i, h := range hostileTexts {
		b, js := []byte(h), hostileJS[i]
		// The program's text: a tool's name, arguments, a log, a throw.
		named := start(&pb.Start{Code: []byte(`async () => { const T = ` + js + `; console.log(T); let r; try { r = await s[T](T, {[T]: T}) } catch (e) { r = e.message }; throw new Error(T + r) }`),
			Providers: []*pb.Provider{{Name: []byte("s")}}})
		f.Add(named, answer(&pb.Answer{Id: 1, Outcome: &pb.Answer_Envelope{Envelope: []byte(`{"result":"` + h + `"}`)}}))
		f.Add(named, answer(&pb.Answer{Id: 1, Outcome: &pb.Answer_Failure{Failure: b}}))
		f.Add(named, answer(&pb.Answer{Id: 1, Outcome: &pb.Answer_ResultJson{ResultJson: []byte(`"` + h + `"`)}}))
		// The host's text: code, names, declarations, preludes, policies.
		f.Add(start(&pb.Start{Code: []byte(`async () => { console.log("` + h + `"); return "` + h + `" }`),
			Providers: []*pb.Provider{{Name: b, Tools: [][]byte{b, []byte("x")}, Prelude: b, ProxySource: b,
				Apis: []*pb.ToolDoc{{Name: b, Description: b, ParamsJson: b, ReturnsJson: b}}}},
			Governance: &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: b, Policy: &pb.ToolPolicy{RequiresApproval: true}}}}}), []byte(nil))
		f.Add(start(&pb.Start{Mode: pb.Start_MODE_RUN, Code: []byte(`const T = ` + js + `; console.log(T); return [c({t: T}), T]`),
			Capabilities: []*pb.Capability{{Name: []byte("c"), Description: b}, {Name: b, ParamsJson: b}}}),
			answer(&pb.Answer{Id: 1, Outcome: &pb.Answer_ResultJson{ResultJson: []byte(`"` + h + `"`)}}))
		f.Add(start(&pb.Start{Code: []byte(`async () => await g[` + js + `](1)`), Providers: []*pb.Provider{{Name: []byte("g")}},
			Governance: &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: []byte("*"), Policy: &pb.ToolPolicy{RequiresApproval: true}}}}}), []byte(nil))
		f.Add(start(&pb.Start{Governance: &pb.Governance{}, Resume: &pb.Resume{Body: b, Reason: b, ArgsJson: b}}), []byte(nil))
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
		if !errors.Is(ended, io.EOF) && !statusOK(status.Convert(ended), codes.InvalidArgument, codes.ResourceExhausted,
			codes.FailedPrecondition, codes.Canceled, codes.DeadlineExceeded) {
			t.Fatalf("frames %x, %x: the stream ended with %v", first, second, ended)
		}
		res := client.Execute(context.Background(), codemode.Request{Code: "async () => 'still here'"})
		if res.Error != "" || string(res.Result) != `"still here"` {
			t.Fatalf("after frames %x, %x the daemon does not serve: %+v", first, second, res)
		}
	})
}

// FuzzDaemonStandalone: any bytes a client sends as a Standalone request
// (protobuf or not) get a Result or a status that says what was wrong,
// within bounds, and the daemon serves the next program. The seeds carry
// hostile text in the fields that hold text, for the fuzzer to vary.
func FuzzDaemonStandalone(f *testing.F) {
	start := func(s *pb.Start) []byte { return marshal(f, s) }
	for _, s := range [][]byte{
		start(&pb.Start{Code: []byte("async () => 1")}),
		start(&pb.Start{Code: []byte("return 1"), Mode: pb.Start_MODE_RUN}),
		start(&pb.Start{Code: []byte("async () => await s.get(1)"), Providers: []*pb.Provider{{Name: []byte("s"), Tools: [][]byte{[]byte("get")}}}}),
		start(&pb.Start{Code: []byte("return 1"), Mode: pb.Start_MODE_RUN, Capabilities: []*pb.Capability{{Name: []byte("c"), ParamsJson: []byte("{")}}}),
		start(&pb.Start{Code: []byte("async () => 1"), Limits: &pb.Limits{Memory: -1, DeadlineMs: 1 << 40}}),
		start(&pb.Start{Code: []byte("async () => 1"), Limits: &pb.Limits{Memory: 1 << 40}, RequireLimits: true}),
		start(&pb.Start{Code: []byte("async () => { for (;;) {} }"), Limits: &pb.Limits{DeadlineMs: 10}}),
		start(&pb.Start{Code: []byte("async () => 1"), RetainHandles: true}),
		start(&pb.Start{Code: []byte("async () => 1"), Governance: &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: []byte("*"), Policy: &pb.ToolPolicy{Budget: -1, TimeoutNs: -5}}}}}),
		start(&pb.Start{Resume: &pb.Resume{Body: []byte("not a body"), Approve: true}}),
		start(&pb.Start{Code: []byte("async () => 1"), Trace: map[string]string{"traceparent": "00-zz-zz-01"}}),
		{0xff, 0xff, 0xff}, []byte("garbage"), nil,
	} {
		f.Add(s)
	}
	for i, h := range hostileTexts {
		js := hostileJS[i]
		f.Add(start(&pb.Start{Code: []byte(`async () => { const T = ` + js + `; console.log(T, "` + h + `"); try { await __dispatch(T, T, T) } catch (e) { console.log(e.message) }; throw new Error(T) }`)}))
		f.Add(start(&pb.Start{Mode: pb.Start_MODE_RUN, Code: []byte(`const T = ` + js + `; console.log(T); return {[T]: T, h: "` + h + `"}`)}))
		f.Add(start(&pb.Start{Code: []byte(h), Governance: &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: []byte(h)}}}}))
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
		} else if !statusOK(status.Convert(err), codes.InvalidArgument, codes.ResourceExhausted, codes.FailedPrecondition) {
			t.Fatalf("request %x: %v", req, err)
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

// FuzzDaemonText: a program whose text is any UTF-16 (the fuzzer's bytes
// as code units: lone surrogates, NUL, U+FFFF, long text) in a tool's
// name, its arguments, logs, a thrown error and its result, served by a
// host whose answers are any bytes (an envelope's text, an error
// envelope's, a Go error's), has the same outcome, byte for byte, and
// makes the same dispatch calls, in process and through the daemon.
func FuzzDaemonText(f *testing.F) {
	long := slices.Repeat([]uint16{0xe9}, 5<<10)
	for i, units := range [][]uint16{{0xd800}, {'a', 0, 'b'}, {0xffff, 0xfffe}, {0xdc00, 0xd800}, append(long, 0xdc00)} {
		f.Add(le(units...), hostileTexts[i])
	}
	f.Add(le('f', 'a', 'i', 'l'), "\x00")
	f.Add(le('g', 'o', 'f', 'a', 'i', 'l', 0xdbff), "\xed\xbf\xbf")
	tw := newTwins(f, twinOptions{limits: codemode.Limits{Deadline: 5 * time.Second}})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, units []byte, raw string) {
		if len(units) > 32<<10 || len(raw) > 32<<10 {
			t.Skip("beyond the text the payload limit leaves room for")
		}
		codes := make([]string, 0, len(units)/2)
		for i := 0; i+1 < len(units); i += 2 {
			codes = append(codes, strconv.Itoa(int(units[i])|int(units[i+1])<<8))
		}
		lit := "[" + strings.Join(codes, ",") + "].map((c) => String.fromCharCode(c)).join('')"
		for _, code := range []string{
			`async () => { const T = ` + lit + `; console.log(T); let r; try { r = await db[T](T, {[T]: T}) } catch (e) { r = "caught " + e.message }; return [r, await db.raw(), T] }`,
			`async () => { const T = ` + lit + `; console.error(T); try { await db.fail(T) } catch (e) { console.log(e.message) }; await db.gofail(); throw new Error(T) }`,
		} {
			var got []executed
			for _, r := range tw.both() {
				c := &calls{answer: raw}
				got = append(got, executedOf(r.r.Execute(ctx, codemode.Request{Code: code, Providers: []codemode.Provider{{Name: "db"}}, Dispatch: c.dispatch}), c))
			}
			if got[0].Err != nil && got[0].Err.Kind == codemode.KindInternal {
				t.Fatalf("in process, an internal error: %+v", got[0])
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("units %x, answer %q: in process %+v\nthrough the daemon %+v", units, raw, got[0], got[1])
			}
		}
	})
}

// le is UTF-16 code units as FuzzDaemonText takes them (little-endian).
func le(units ...uint16) []byte {
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}
