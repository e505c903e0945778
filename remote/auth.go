package remote

import (
	"context"
	"crypto/subtle"
	"strings"
	"sync"
	"time"

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
	return interceptors(tokenCheck(token))
}

// TokenAuth is [TokenAuth] whose refusals the daemon logs (at most one
// line a second, with the count since the last) and counts in its
// metrics (codemode_unauthenticated_total).
func (s *Server) TokenAuth(token string) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	return interceptors(s.counted(tokenCheck(token)))
}

// ClientCertAuth is [ClientCertAuth] whose refusals the daemon logs and
// counts, as [Server.TokenAuth]'s.
func (s *Server) ClientCertAuth() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	return interceptors(s.counted(certCheck))
}

// counted logs and counts the calls check refuses.
func (s *Server) counted(check func(ctx context.Context, method string) error) func(ctx context.Context, method string) error {
	var mu sync.Mutex
	var last time.Time
	var since int
	return func(ctx context.Context, method string) error {
		err := check(ctx, method)
		if err == nil {
			return nil
		}
		s.opts.Metrics.unauthenticated()
		mu.Lock()
		defer mu.Unlock()
		since++
		if now := time.Now(); now.Sub(last) >= time.Second {
			addr := ""
			if p, ok := grpcpeer.FromContext(ctx); ok && p.Addr != nil {
				addr = p.Addr.String()
			}
			s.log.Warn("unauthenticated call refused", "peer", addr, "method", method, "refused_since_last_line", since)
			last, since = now, 0
		}
		return err
	}
}

// tokenCheck refuses a call without the bearer token.
func tokenCheck(token string) func(ctx context.Context, method string) error {
	return func(ctx context.Context, method string) error {
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
}

// ClientCertAuth returns interceptors that refuse, with Unauthenticated,
// every call (but the health service's) whose TLS peer presented no
// verified client certificate. Pair it with tls.VerifyClientCertIfGiven
// (and ClientCAs): a handshake without a certificate then succeeds and the
// call is refused with a code the client can tell from a network failure.
func ClientCertAuth() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	return interceptors(certCheck)
}

// certCheck refuses a call whose peer presented no verified certificate.
func certCheck(ctx context.Context, method string) error {
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
	s.mu.Lock()
	s.health = h
	s.mu.Unlock()
	return h
}

// Drain stops taking programs (one more is refused with UNAVAILABLE,
// which a client sends to another daemon), turns the health service
// NOT_SERVING (the server's and the Executor service's status, as a new
// connection's check sees them while the listener stays open), and waits
// until the programs in flight end or ctx is done. It reports whether
// they all ended; the caller then stops the gRPC server.
func (s *Server) Drain(ctx context.Context) bool {
	s.mu.Lock()
	select {
	case <-s.draining:
	default:
		close(s.draining)
		s.log.Info("draining", "in_flight", len(s.admit))
	}
	if s.health != nil {
		s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		s.health.SetServingStatus(pb.Executor_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	}
	s.mu.Unlock()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for len(s.admit) > 0 {
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
