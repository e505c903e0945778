package remote_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// certs is a CA and a certificate it signed for 127.0.0.1.
func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, isCA bool, usage x509.ExtKeyUsage) (tls.Certificate, *x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "codemode-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: isCA, BasicConstraintsValid: true}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, cert, key
}

// TestMutualTLS: with client certificates required, a client without one
// is Unauthenticated and runs nothing; one with a certificate of the CA runs its program.
func TestMutualTLS(t *testing.T) {
	_, caCert, caKey := issue(t, nil, nil, true, x509.ExtKeyUsageAny)
	serverPair, _, _ := issue(t, caCert, caKey, false, x509.ExtKeyUsageServerAuth)
	clientPair, _, _ := issue(t, caCert, caKey, false, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{serverPair}, ClientCAs: pool,
		ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12})
	u, st := remote.ClientCertAuth()
	addr, rec := daemon(t, remote.ServerOptions{}, grpc.Creds(creds), grpc.ChainUnaryInterceptor(u), grpc.ChainStreamInterceptor(st))
	req := codemode.Request{Code: "async () => 40 + 2"}

	noCert := dial(t, addr, remote.WithTLS(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})))
	res := noCert.Execute(context.Background(), req)
	assert.Contains(t, res.Error, "Unauthenticated")
	assert.Empty(t, rec.all(), "nothing reached the service")

	withCert := dial(t, addr, remote.WithTLS(credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientPair},
		MinVersion: tls.VersionTLS12})))
	res = withCert.Execute(context.Background(), req)
	require.Empty(t, res.Error)
	assert.Equal(t, "42", string(res.Result))
}

// TestFullDaemon: past MaxPrograms a program is refused at once
// (RESOURCE_EXHAUSTED, retried by the client a few times, then reported)
// instead of queueing past its deadline.
func TestFullDaemon(t *testing.T) {
	addr, _ := daemon(t, remote.ServerOptions{MaxPrograms: 1})
	c := dial(t, addr)
	release := make(chan struct{})
	arrived := make(chan struct{})
	first := make(chan codemode.ExecuteResult, 1)
	go func() {
		first <- c.Execute(context.Background(), codemode.Request{Code: "async () => await s.wait()", Providers: []codemode.Provider{{Name: "s"}},
			Dispatch: func(context.Context, string, string, string) (string, error) {
				close(arrived)
				<-release
				return `{"result":"done"}`, nil
			}})
	}()
	<-arrived
	start := time.Now()
	res := c.Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	assert.Contains(t, res.Error, "ResourceExhausted")
	assert.Less(t, time.Since(start), 5*time.Second, "refused, not queued")
	close(release)
	r := <-first
	require.Empty(t, r.Error)
	res = c.Execute(context.Background(), codemode.Request{Code: "async () => 1"})
	require.Empty(t, res.Error)
}
