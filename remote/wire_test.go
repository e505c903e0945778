package remote_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// rawCodec sends bytes as they are: frames that are no protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestGarbageOnTheWire: an oversized message, frames that are no protobuf
// and bytes that are no HTTP/2 each fail their own stream or connection;
// the daemon serves the next program.
func TestGarbageOnTheWire(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(128<<20)))
	require.NoError(t, err)
	defer conn.Close()
	ctx := context.Background()

	// Oversized: a 65 MiB program past the daemon's 64 MiB.
	st, err := pb.NewExecutorClient(conn).Program(ctx)
	require.NoError(t, err)
	st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: &pb.Start{Code: []byte(strings.Repeat("x", 65<<20))}}})
	_, err = st.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), err)

	// Frames that are no protobuf.
	for _, frame := range [][]byte{{0xff, 0xff, 0xff, 0xff}, []byte("not a protobuf at all"), {0x0a, 0xff, 0x01}} {
		cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
			"/codemode.remote.v1.Executor/Program", grpc.ForceCodec(rawCodec{}))
		require.NoError(t, err)
		require.NoError(t, cs.SendMsg(frame))
		var reply []byte
		err = cs.RecvMsg(&reply)
		assert.Error(t, err)
	}

	// Bytes that are no HTTP/2.
	for _, junk := range []string{"GET / HTTP/1.1\r\n\r\n", "\x00\x01\x02\x03 garbage", strings.Repeat("\xff", 4096)} {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte(junk))
		buf := make([]byte, 512)
		c.Read(buf)
		c.Close()
	}

	res := dial(t, addr).Execute(ctx, codemode.Request{Code: "async () => 'still here'"})
	require.Empty(t, res.Error)
	assert.Equal(t, `"still here"`, string(res.Result))
}

// TestStreamEndsBeforeStart: a stream the client ends before sending
// anything is refused with InvalidArgument saying so, not an Unknown "EOF"
// (found by FuzzDaemonFrames).
func TestStreamEndsBeforeStart(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	st, err := pb.NewExecutorClient(conn).Program(context.Background())
	require.NoError(t, err)
	require.NoError(t, st.CloseSend())
	_, err = st.Recv()
	assert.Equal(t, codes.InvalidArgument, status.Code(err), err)
	assert.Equal(t, "the stream ended before the program's start", status.Convert(err).Message())
}

// TestStartTimeout: a stream that sends nothing is ended after
// StartTimeout with DeadlineExceeded, freeing its program slot. The
// timeout is 2 s: the program after it must send its Start within it, on
// a loaded machine under -race.
func TestStartTimeout(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{StartTimeout: 2 * time.Second, MaxPrograms: 1})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	st, err := pb.NewExecutorClient(conn).Program(context.Background())
	require.NoError(t, err)
	_, err = st.Recv() // sends nothing
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), err)
	assert.Equal(t, "no program start within 2s", status.Convert(err).Message())
	res := dial(t, addr).Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	require.Empty(t, res.Error, "the slot is free again")
}

// TestTextFieldsKeepTheirEncoding: the fields that became bytes so text
// that is not UTF-8 crosses (remote.proto, "Text is bytes") encode as the
// strings they were, so peers built from the older contract read valid
// text as before; governance.tools encodes as the map<string, ToolPolicy>
// it was (an entry: the name, field 1; the policy, field 2); and text that
// is not UTF-8 goes through byte for byte.
func TestTextFieldsKeepTheirEncoding(t *testing.T) {
	policy := &pb.ToolPolicy{Budget: 3, RequiresApproval: true}
	got := marshal(t, &pb.Governance{Tools: []*pb.ToolPolicyEntry{{Name: []byte("db.write"), Policy: policy}}, TtlMs: 5})
	entry := protowire.AppendTag(nil, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "db.write")
	entry = protowire.AppendTag(entry, 2, protowire.BytesType)
	entry = protowire.AppendBytes(entry, marshal(t, policy))
	want := protowire.AppendTag(nil, 1, protowire.BytesType)
	want = protowire.AppendBytes(want, entry)
	want = protowire.AppendTag(want, 2, protowire.VarintType)
	want = protowire.AppendVarint(want, 5)
	assert.Equal(t, want, got, "a map entry's encoding")

	got = marshal(t, &pb.Call{Id: 1, Provider: []byte("db"), Tool: []byte("\xed\xa0\x80"), ArgsJson: []byte(`["\ud800"]`)})
	want = protowire.AppendTag(nil, 1, protowire.VarintType)
	want = protowire.AppendVarint(want, 1)
	for i, s := range []string{"db", "\xed\xa0\x80", `["\ud800"]`} {
		want = protowire.AppendTag(want, protowire.Number(i+2), protowire.BytesType)
		want = protowire.AppendString(want, s)
	}
	assert.Equal(t, want, got, "a string field's encoding")
	var back pb.Call
	require.NoError(t, proto.Unmarshal(got, &back))
	assert.Equal(t, "\xed\xa0\x80", string(back.Tool), "byte for byte")
}
