package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/remote"
)

// addressIn reads r until a line matches pattern and returns its group
// (a server's address from its log), or fails after 30 s.
func addressIn(t *testing.T, r io.Reader, pattern string) string {
	t.Helper()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		re := regexp.MustCompile(pattern)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start")
		return ""
	}
}

// TestServe: `codemode serve` with a token runs a remote client's program
// (its tool call answered in this process) and drains when told to.
func TestServe(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("tok\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--token-file", token, "--grace", "5s"}, nil, io.Discard, pw)
		pw.Close()
	}()
	a := addressIn(t, pr, `listening on (\S+)`)
	c, err := remote.Dial(a, remote.WithToken("tok"))
	require.NoError(t, err)
	defer c.Close()
	res := c.Execute(ctx, codemode.Request{Code: "async () => (await db.q()) + 1", Providers: []codemode.Provider{{Name: "db"}},
		Dispatch: func(context.Context, string, string, string) (string, error) { return `{"result":41}`, nil }})
	require.Empty(t, res.Error)
	assert.Equal(t, "42", string(res.Result))
	bad, err := remote.Dial(a)
	require.NoError(t, err)
	defer bad.Close()
	assert.Contains(t, bad.Execute(ctx, codemode.Request{Code: "async () => 1"}).Error, "Unauthenticated")
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(30 * time.Second):
		t.Fatal("codemode serve did not drain")
	}
}
