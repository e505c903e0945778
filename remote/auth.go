package remote

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	pb "github.com/codemode-go/codemode/remote/remotepb"
)

// interceptors makes the unary and stream interceptors of one check of a
// call's context and method.
func interceptors(check func(ctx context.Context, method string) error) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := check(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if err := check(ss.Context(), info.FullMethod); err != nil {
			return err
		}
		return h(srv, ss)
	}
	return unary, stream
}

// exempt reports the health service's methods, which probes call without
// credentials.
func exempt(method string) bool { return strings.HasPrefix(method, "/grpc.health.v1.Health/") }

// TokenAuth returns interceptors that refuse every call without
// "authorization: Bearer <token>" with Unauthenticated, before anything
// runs (the health service included only if it is not exempt: it is).
func TokenAuth(token string) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	check := func(ctx context.Context, method string) error {
		if exempt(method) {
			return nil
		}
		md, _ := metadata.FromIncomingContext(ctx)
		for _, v := range md.Get("authorization") {
			if got, ok := strings.CutPrefix(v, "Bearer "); ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 {
				return nil
			}
		}
		return status.Error(codes.Unauthenticated, "a valid bearer token is required")
	}
	return interceptors(check)
}

// ClientCertAuth returns interceptors that refuse, with Unauthenticated,
// every call (but the health service's) whose TLS peer presented no
// verified client certificate. Pair it with tls.VerifyClientCertIfGiven
// (and ClientCAs): a handshake without a certificate then succeeds and the
// call is refused with a code the client can tell from a network failure.
func ClientCertAuth() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	check := func(ctx context.Context, method string) error {
		if exempt(method) {
			return nil
		}
		if p, ok := grpcpeer.FromContext(ctx); ok {
			if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
				return nil
			}
		}
		return status.Error(codes.Unauthenticated, "a client certificate signed by the daemon's CA is required")
	}
	return interceptors(check)
}

// Register registers the daemon's service on g, with the gRPC health
// service (serving) and reflection; it returns the health server, to set
// NOT_SERVING while draining.
func (s *Server) Register(g *grpc.Server) *health.Server {
	pb.RegisterExecutorServer(g, s)
	h := health.NewServer()
	healthpb.RegisterHealthServer(g, h)
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus(pb.Executor_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	reflection.Register(g)
	return h
}
