package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

const serveHelp = `Runs the daemon: programs sent by remote clients (package remote) run here,
and every tool call they make travels back over the program's own gRPC stream
to the client, which runs it where its credentials are. The limit flags are the
daemon's maxima (the deadline's default is 30s, for programs that wait on real
tools): a program asking for more gets them, or is refused with
FAILED_PRECONDITION if its client requires its limits
(remote.WithRequiredLimits). A program gets no other slot than the one it was
admitted to: a client that stops reading has its stream ended --send-grace after
its program's result (or a retained sandbox's reply) was due.

It refuses to listen on an address other than loopback without TLS
(--tls-cert/--tls-key, with --client-ca for mTLS) or a bearer token
(--token-file); calls refused for want of them are logged (a line a second at
most) and counted (codemode_unauthenticated_total). The gRPC health service (no
token needed) and reflection are served. SIGTERM drains: the health service
turns NOT_SERVING (a new connection's check sees it: the listener stays open), a
new program is refused with UNAVAILABLE (a client sends it to another daemon),
those in flight get --grace to finish, then they are cancelled.

Memory is admitted, not hoped for: --memory-budget bounds the engine memory of
every program at once (default: three quarters of what the process may use: the
container's memory limit, or GOMEMLIMIT, or the machine's memory where neither
is set; the "serving" log line says which), charged as programs allocate. A
budget above what the process may use is refused (the kernel would end the
process first), and so is 0. A program that finds no room to start is refused
with RESOURCE_EXHAUSTED (its client tries another daemon); one whose heap cannot
grow ends with kind memory_budget. The metrics report the budget, the bytes in use
and the refusals by reason (codemode_memory_budget_bytes,
codemode_memory_in_use_bytes, codemode_programs_refused_total{reason}).

Sandboxes idle for a second keep their pages within --idle-memory (per
executor: one per distinct limits and capability set), so the next burst of
programs reuses them without the kernel making and zeroing each page again;
beyond it, all but a few warm ones are freed. A daemon that serves bursts of a
thousand programs awaiting their tools at once sets about 150KiB per program of
the burst. Idle pages count against --memory-budget and are given back when a
program needs the room, to start or to grow.

Examples:
  codemode serve --listen 127.0.0.1:7070
  codemode serve --listen :7070 --token-file /run/secrets/codemode-token --deadline 30s --memory 64MiB
  codemode serve --listen :7070 --token-file /run/secrets/codemode-token --memory-budget 768MiB --idle-memory 160MiB
  codemode serve --listen :7070 --tls-cert tls.crt --tls-key tls.key --client-ca ca.crt
`

func cmdServe(ctx context.Context, args []string, stderr io.Writer) int {
	fs := newFlagSet("serve", "[flags]", serveHelp, stderr)
	var lf limitFlags
	lf.register(fs, "default "+remote.DefaultServerDeadline.String()+", the most a program gets")
	listen := fs.String("listen", "127.0.0.1:7070", "the address to serve gRPC on")
	tokenFile := fs.String("token-file", "", "a file holding the bearer token clients must send")
	cert := fs.String("tls-cert", "", "the TLS certificate (PEM)")
	key := fs.String("tls-key", "", "the TLS key (PEM)")
	clientCA := fs.String("client-ca", "", "require client certificates signed by this CA (PEM): mTLS")
	grace := new(time.Duration)
	durationVar(fs, grace, "grace", 30*time.Second, "how long a drain waits for the programs in flight")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics on this address (/metrics)")
	maxPrograms := fs.Int("max-programs", codemode.DefaultSlots, "programs in flight; one more is refused with RESOURCE_EXHAUSTED")
	sendGrace := new(time.Duration)
	durationVar(fs, sendGrace, "send-grace", 10*time.Second, "how long a result waits for a client that does not read before its stream ends")
	sessionTTL := new(time.Duration)
	durationVar(fs, sessionTTL, "session-ttl", remote.DefaultSessionTTL, "how long a client's idle session is kept (its next program then brings its journal)")
	var memBudget budgetFlag
	fs.Var(&memBudget, "memory-budget", "the engine memory of all programs at once: a size, at most what the process may use, or a percentage of it (default 75%; the log says where it was read)")
	var idleMemory int
	fs.Var(size{&idleMemory}, "idle-memory", "what the idle sandboxes of one executor (one per limits and capability set clients ask for) keep resident between bursts, "+
		"within --memory-budget (default "+sizeText(codemode.DefaultIdleMemory)+"; 0 keeps none)")
	var tl telemetryFlags
	tl.register(fs, telemetryTimeoutDaemon)
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if fs.NArg() != 0 {
		return usageLine(fs, "takes no arguments")
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{ReplaceAttr: durationText}))
	if lf.l.Deadline == 0 {
		lf.l.Deadline = remote.DefaultServerDeadline
	}
	tel, err := tl.open(ctx)
	if err != nil {
		return exitFor(stderr, err)
	}
	defer tel.close(stderr)
	mb, budgetFrom, err := memoryBudget(memBudget, lf.l.Memory)
	if err != nil {
		return exitFor(stderr, err)
	}
	if p := budgetFrom.process; p > 0 && mb.Bytes() > p/4*3 {
		log.Warn("the memory budget leaves less than a quarter of what the process may use for Go's heap, the C library and the binary",
			append([]any{"memory_budget", mb.Bytes()}, budgetFrom.logAttrs()...)...)
	}
	idle := int64(codemode.DefaultIdleMemory)
	if flagGiven(fs, "idle-memory") { // 0 is a size of its own: none kept
		idle = int64(idleMemory)
	}
	if *sessionTTL <= 0 {
		return exitFor(stderr, usagef("--session-ttl must be positive"))
	}
	if *grace < 0 || *sendGrace < 0 { // a negative wait drained at once, or became the default
		return exitFor(stderr, usagef("--grace and --send-grace must not be negative"))
	}
	opts := remote.ServerOptions{Max: lf.l, Logger: log, MaxPrograms: *maxPrograms, SendGrace: *sendGrace, MemoryBudget: mb,
		SessionTTL: *sessionTTL,
		Executor:   append([]codemode.Option{codemode.WithSlots(*maxPrograms), codemode.WithIdleMemory(idle)}, tel.opts...), Propagator: tel.prop}
	var reg *prometheus.Registry
	if *metricsAddr != "" {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts.Metrics = remote.NewMetrics(reg)
	}
	srv := remote.NewServer(opts)
	defer srv.Close()
	var sopts []grpc.ServerOption
	secured := false
	if *cert != "" || *key != "" {
		creds, err := serverTLS(*cert, *key, *clientCA)
		if err != nil {
			return exitFor(stderr, err)
		}
		sopts = append(sopts, grpc.Creds(creds))
		if *clientCA != "" { // a client without a certificate is Unauthenticated, not a failed handshake
			u, st := srv.ClientCertAuth()
			sopts = append(sopts, grpc.ChainUnaryInterceptor(u), grpc.ChainStreamInterceptor(st))
		}
		secured = true
	} else if *clientCA != "" {
		return exitFor(stderr, usagef("--client-ca needs --tls-cert and --tls-key"))
	}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return exitFor(stderr, usagef("--token-file: %v", err))
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return exitFor(stderr, usagef("--token-file: the file is empty"))
		}
		u, s := srv.TokenAuth(token)
		sopts = append(sopts, grpc.ChainUnaryInterceptor(u), grpc.ChainStreamInterceptor(s))
		secured = true
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return exitFor(stderr, usagef("--listen: %v", err))
	}
	if !secured && !loopback(ln.Addr()) {
		ln.Close()
		return exitFor(stderr, usagef("refusing to serve %s without TLS or a token: give --tls-cert/--tls-key or --token-file (or listen on loopback)", ln.Addr()))
	}
	if reg != nil {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			ln.Close()
			return exitFor(stderr, usagef("--metrics: %v", err))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ms := &http.Server{Handler: mux}
		go ms.Serve(mln)
		defer ms.Close()
		fmt.Fprintf(stderr, "codemode serve: metrics on http://%s/metrics\n", mln.Addr())
	}
	g := grpc.NewServer(append(sopts, srv.GRPCOptions()...)...)
	srv.Register(g)
	attrs := append([]any{"version", versionText(), "memory_budget", mb.Bytes()}, budgetFrom.logAttrs()...)
	log.Info("serving", append(attrs, "idle_memory", idle, "addr", ln.Addr().String(), "tls", *cert != "", "mtls", *clientCA != "",
		"token", *tokenFile != "")...)
	fmt.Fprintf(stderr, "codemode serve: listening on %s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ln) }()
	select {
	case err := <-served:
		if err != nil {
			fmt.Fprintf(stderr, "codemode serve: %v\n", err)
			return exitInternal
		}
		return exitOK
	case <-ctx.Done():
	}
	log.Info("draining", "grace", grace.String())
	dctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if !srv.Drain(dctx) {
		log.Warn("grace period over: cancelling the programs in flight")
		g.Stop()
		return exitOK
	}
	stopped := make(chan struct{})
	go func() {
		g.GracefulStop() // the health checks' and refusals' streams
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-dctx.Done():
		g.Stop()
	}
	return exitOK
}

// budgetFlag is --memory-budget: a size, or a percentage of what the
// process may use (codemode.ProcessMemoryLimit: the container's limit).
type budgetFlag struct {
	bytes   int
	percent float64
}

func (f *budgetFlag) String() string {
	switch {
	case f.percent > 0:
		return strconv.FormatFloat(f.percent, 'f', -1, 64) + "%"
	case f.bytes > 0:
		return sizeText(f.bytes)
	}
	return ""
}

func (f *budgetFlag) Set(v string) error {
	if p, ok := strings.CutSuffix(strings.TrimSpace(v), "%"); ok {
		n, err := strconv.ParseFloat(p, 64)
		if err != nil || !(n > 0 && n <= 100) {
			return fmt.Errorf("invalid percentage %q (want more than 0%% and at most 100%%)", v)
		}
		*f = budgetFlag{percent: n}
		return nil
	}
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("a budget of 0 bytes holds no program (leave --memory-budget out for the default, 75%% of what the process may use)")
	}
	*f = budgetFlag{bytes: n}
	return nil
}

// budgetSource says where the daemon's memory budget came from, for its
// log: the flag or the default, and what the process may use
// (codemode.ProcessMemoryLimit).
type budgetSource struct {
	from        string // "--memory-budget", "--memory-budget 50%", "default 75%"
	process     int64  // what the process may use, 0 if unknown
	processFrom string // "cgroup", "GOMEMLIMIT", "physical memory", or "unknown"
}

// logAttrs are the source's fields in serve's log.
func (b budgetSource) logAttrs() []any {
	return []any{"memory_budget_from", b.from, "process_memory", b.process, "process_memory_from", b.processFrom}
}

// limitText names what the process may use, for an error.
func (b budgetSource) limitText() string {
	switch b.processFrom {
	case "cgroup":
		return "the container's (cgroup's) memory limit"
	case "GOMEMLIMIT":
		return "GOMEMLIMIT"
	}
	return "the machine's memory"
}

// memoryBudget is the daemon's budget: f's bytes, or its percentage of
// what the process may use, or (unset) codemode's default (75% of it);
// refused below what one program at the maximum memory limit needs, and
// above what the process may use (where that can be read: a budget the
// process cannot have is no bound, and the kernel ends the process
// first).
func memoryBudget(f budgetFlag, memory int) (*codemode.MemoryBudget, budgetSource, error) {
	if memory == 0 {
		memory = codemode.DefaultMemory
	}
	limit, from := codemode.ProcessMemoryLimit()
	src := budgetSource{from: "--memory-budget", process: limit, processFrom: from}
	if from == "" {
		src.processFrom = "unknown"
	}
	n := f.bytes
	if f.percent > 0 || n == 0 {
		if limit == 0 {
			return nil, src, usagef("--memory-budget: the process's memory limit cannot be read: give a size")
		}
		if f.percent == 0 {
			src.from = "default 75%"
			b := codemode.DefaultMemoryBudget()
			if want := codemode.MinMemoryBudget(memory); b.Bytes() < want {
				return nil, src, usagef("the default memory budget, %s (75%% of the %s the process may use: %s), cannot hold one program at --memory %s: give --memory-budget (at least %s) or a smaller --memory",
					sizeAtMost(int(b.Bytes())), sizeAtMost(int(limit)), src.limitText(), sizeText(memory), sizeText(int((want+1<<20-1)>>20<<20)))
			}
			return b, src, nil
		}
		src.from = "--memory-budget " + f.String()
		n = int(float64(limit) * f.percent / 100)
	}
	if limit > 0 && int64(n) > limit {
		return nil, src, usagef("--memory-budget %s is more than the process may use: %s (%s); give at most that, or a percentage of it (the default, 75%%, leaves a quarter for the rest of the process)",
			sizeText(n), sizeAtMost(int(limit)), src.limitText())
	}
	if want := codemode.MinMemoryBudget(memory); int64(n) < want {
		return nil, src, usagef("--memory-budget %s cannot hold one program at --memory %s: give at least %s",
			sizeText(n), sizeText(memory), sizeText(int((want+1<<20-1)>>20<<20)))
	}
	b, err := codemode.NewMemoryBudget(int64(n))
	return b, src, err
}

func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// serverTLS loads a certificate, and with a CA file requires client
// certificates (mTLS).
func serverTLS(cert, key, ca string) (credentials.TransportCredentials, error) {
	if cert == "" || key == "" {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, usagef("TLS: %v", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, usagef("--client-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usagef("--client-ca: no certificate in %s", ca)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven // refused with Unauthenticated by remote.ClientCertAuth
	}
	return credentials.NewTLS(cfg), nil
}

// durationText writes a log record's durations as durations ("1.52ms"),
// not as the JSON handler's bare count of nanoseconds.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
