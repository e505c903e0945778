package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/batch"
	"github.com/codemode-go/codemode/remote"
)

// remoteFlags send run's and batch's programs to daemons (codemode serve)
// instead of running them here; the tool servers stay here, and their
// calls come back over each program's stream. The auth and TLS flags
// mirror serve's.
type remoteFlags struct {
	addr      string
	tokenFile string
	ca        string
	cert, key string
}

func (rf *remoteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.addr, "remote", "", "run the programs on daemons (codemode serve): host:port, a comma-separated list, or dns:///name:port (balanced per program)")
	fs.StringVar(&rf.tokenFile, "remote-token-file", "", "with --remote: a file holding the bearer token the daemons want (serve's --token-file)")
	fs.StringVar(&rf.ca, "remote-ca", "", "with --remote: speak TLS, verifying the daemons' certificates against this CA (PEM)")
	fs.StringVar(&rf.cert, "remote-cert", "", "with --remote-ca: the client certificate (PEM) for daemons that require one (serve's --client-ca)")
	fs.StringVar(&rf.key, "remote-key", "", "with --remote-cert: its key (PEM)")
}

// remoteBalancing balances a program per call across a target's
// addresses (a comma list, or a DNS name's: a headless Service's pods).
const remoteBalancing = `{"loadBalancingConfig": [{"round_robin": {}}]}`

// remoteProbeTimeout bounds the check that the daemons answer before the
// first job.
const remoteProbeTimeout = 10 * time.Second

// fleet is the daemons a batch runs on: a client per set of limits.
type fleet struct {
	target  string
	opts    []remote.Option
	mu      sync.Mutex
	clients map[codemode.Limits]*remote.Client
}

// open dials the daemons --remote names (nil without --remote) and checks
// before any job that they answer with these credentials: unreachable, a
// token refused, a TLS mismatch are errors here. queue is the batch's
// queue timeout, asked of the daemons.
func (rf *remoteFlags) open(ctx context.Context, gov *codemode.Governance, queue time.Duration) (*fleet, error) {
	if rf.addr == "" {
		if rf.tokenFile != "" || rf.ca != "" || rf.cert != "" || rf.key != "" {
			return nil, usagef("--remote-token-file, --remote-ca, --remote-cert and --remote-key go with --remote")
		}
		return nil, nil
	}
	f := &fleet{clients: map[codemode.Limits]*remote.Client{}}
	dial := []grpc.DialOption{grpc.WithDefaultServiceConfig(remoteBalancing)}
	switch {
	case strings.Contains(rf.addr, ","):
		var addrs []resolver.Address
		for _, a := range strings.Split(rf.addr, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, resolver.Address{Addr: a})
			}
		}
		if len(addrs) == 0 {
			return nil, usagef("--remote: no address in %q", rf.addr)
		}
		r := manual.NewBuilderWithScheme("codemode-fleet")
		r.InitialState(resolver.State{Addresses: addrs})
		dial = append(dial, grpc.WithResolvers(r))
		f.target = r.Scheme() + ":///fleet"
	default:
		f.target = rf.addr
	}
	f.opts = append(f.opts, remote.WithDialOptions(dial...), remote.WithQueueTimeout(queue))
	if rf.tokenFile != "" {
		b, err := os.ReadFile(rf.tokenFile)
		if err != nil {
			return nil, usagef("--remote-token-file: %v", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, usagef("--remote-token-file: the file is empty")
		}
		f.opts = append(f.opts, remote.WithToken(token))
	}
	if rf.ca != "" {
		creds, err := rf.tls()
		if err != nil {
			return nil, err
		}
		f.opts = append(f.opts, remote.WithTLS(creds))
	} else if rf.cert != "" || rf.key != "" {
		return nil, usagef("--remote-cert and --remote-key go with --remote-ca")
	}
	if gov != nil {
		f.opts = append(f.opts, remote.WithGovernance(*gov))
	}
	if err := f.probe(ctx); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// whereFlags are run's and batch's flags of where and how the programs
// run beyond the tools: --remote (and its auth) and --typecheck.
type whereFlags struct {
	rf remoteFlags
	tc typeCheckFlags
}

func (wf *whereFlags) register(fs *flag.FlagSet) {
	wf.rf.register(fs)
	wf.tc.register(fs)
}

// open opens the fleet (nil without --remote) and the type check's
// executor options; close releases both.
func (wf *whereFlags) open(ctx context.Context, gf *govFlags) (fl *fleet, opts []codemode.Option, close func(), err error) {
	if fl, err = openFleet(ctx, &wf.rf, gf); err != nil {
		return nil, nil, nil, err
	}
	opts, closeCheck, err := wf.tc.open(fl != nil)
	if err != nil {
		fl.close()
		return nil, nil, nil, err
	}
	return fl, opts, func() { closeCheck(); fl.close() }, nil
}

// openFleet opens --remote's daemons under the flags' governance (nil
// without --remote).
func openFleet(ctx context.Context, rf *remoteFlags, gf *govFlags) (*fleet, error) {
	g, err := gf.governance()
	if err != nil {
		return nil, err
	}
	return rf.open(ctx, g, batch.DefaultQueueTimeout)
}

// tls is the client's TLS: the daemons' CA, and a certificate of its own.
func (rf *remoteFlags) tls() (credentials.TransportCredentials, error) {
	pem, err := os.ReadFile(rf.ca)
	if err != nil {
		return nil, usagef("--remote-ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usagef("--remote-ca %s: no PEM certificate in it", rf.ca)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if rf.cert != "" || rf.key != "" {
		if rf.cert == "" || rf.key == "" {
			return nil, usagef("give --remote-cert and --remote-key together")
		}
		c, err := tls.LoadX509KeyPair(rf.cert, rf.key)
		if err != nil {
			return nil, usagef("--remote-cert/--remote-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return credentials.NewTLS(cfg), nil
}

// probe runs `return 1` on the daemons before any job: an error names what
// is wrong (unreachable, the token, TLS).
func (f *fleet) probe(ctx context.Context) error {
	c, err := f.client(codemode.Limits{})
	if err != nil {
		return usagef("--remote %s: %v", f.target, err)
	}
	pctx, cancel := context.WithTimeout(ctx, remoteProbeTimeout)
	defer cancel()
	if _, err := c.(*remote.Client).Run(pctx, "return 1"); err != nil {
		var ee *codemode.ExecError
		msg := err.Error()
		if errors.As(err, &ee) {
			msg = ee.Message
		}
		return fmt.Errorf("--remote %s: the daemons do not answer: %s", f.target, strings.TrimPrefix(msg, "codemode: run_js: "))
	}
	return nil
}

// client is the client of a set of limits, dialled on first use.
func (f *fleet) client(l codemode.Limits) (batch.Engine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clients[l]; c != nil {
		return c, nil
	}
	// Required: a daemon that cannot grant a job's limits refuses it (an
	// error), rather than run it under others; the limits a job leaves
	// unset are the library's, as a local batch runs it, not the daemon's.
	c, err := remote.Dial(f.target, append([]remote.Option{remote.WithRequiredLimits(l.WithDefaults())}, f.opts...)...)
	if err != nil {
		return nil, err
	}
	f.clients[l] = c
	return c, nil
}

// close closes the clients.
func (f *fleet) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.clients {
		c.Close()
	}
}

// engines is batch.Options.Remote for the fleet (nil without one).
func (f *fleet) engines() func(codemode.Limits) (batch.Engine, error) {
	if f == nil {
		return nil
	}
	return f.client
}
