package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleetMix writes the 10,000-job mix of every outcome (ok, js, timeout,
// memory_exceeded, pending_promise, bad_input, a tool call answered from
// fixtures) and returns its file and the fixtures'.
func fleetMix(t *testing.T, dir string) (in, fixtures string) {
	var b strings.Builder
	for i := range 10000 {
		switch {
		case i%1000 == 999:
			b.WriteString("{\"id\": " + fmt.Sprint(i) + ", \"code\": \n")
			continue
		case i%250 == 7:
			fmt.Fprintf(&b, `{"id": %d, "code": "while (true) {}", "limits": {"deadline": 20}}`, i)
		case i%50 == 3:
			fmt.Fprintf(&b, `{"id": %d, "code": "const a = []; while (true) a.push(new Array(1000).fill(1))", "limits": {"memory": "2MiB"}}`, i)
		case i%10 == 1:
			fmt.Fprintf(&b, `{"id": %d, "code": "throw new Error('no %d')"}`, i, i)
		case i%10 == 2:
			fmt.Fprintf(&b, `{"id": %d, "code": "await new Promise(() => {})"}`, i)
		case i%10 == 5:
			fmt.Fprintf(&b, `{"id": %d, "code": "const r = await svc.echo(%d); console.log('got', r); return [r, Math.random() < 2]"}`, i, i%3)
		default:
			fmt.Fprintf(&b, `{"id": %d, "code": "return %d * 2"}`, i, i)
		}
		b.WriteByte('\n')
	}
	in, fixtures = filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "fixtures.json")
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(fixtures, []byte(`{"svc": {"echo": [
		{"args": [0], "result": "zero"}, {"args": [1], "result": "one"}, {"args": [2], "error": "two is refused"}]}}`), 0o644))
	return in, fixtures
}

// outcomeLines reads a batch's output with its measurements dropped: the
// time it took, and its peak memory, which moves by a few hundred bytes
// with the warm sandbox a run gets (a clone of the template, the slot's own
// image: scheduling, here as in process). What is left is the job's
// outcome, byte for byte.
// msRE matches a ledger's elapsed times.
var msRE = regexp.MustCompile(`"ms":[0-9.e-]+`)

func outcomeLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		delete(m, "elapsed_ms")
		delete(m, "peak_memory_bytes")
		if e, ok := m["effects"]; ok { // the same calls; their times apart
			m["effects"] = json.RawMessage(msRE.ReplaceAll(e, []byte(`"ms":0`)))
		}
		norm, err := json.Marshal(m)
		require.NoError(t, err)
		out = append(out, string(norm))
	}
	return out
}

// TestBatchOnFleet: the 10,000-job mix run on three `codemode serve`
// processes (--remote, a comma-separated list) gives the outcome lines it
// gives in process, at -j 1 and -j 64; the tools stay here.
func TestBatchOnFleet(t *testing.T) {
	dir := t.TempDir()
	in, fx := fleetMix(t, dir)
	var addrs []string
	for range 3 {
		_, a := startServe(t)
		addrs = append(addrs, a)
	}
	local := filepath.Join(dir, "local.jsonl")
	code, _, stderr := runMain(t, "batch", "-j", "4", "--tools", fx, "-o", local, in)
	require.Equal(t, exitOK, code, stderr)
	want := outcomeLines(t, local)
	require.Len(t, want, 10000)
	for _, j := range []string{"1", "64"} {
		out := filepath.Join(dir, "fleet-"+j+".jsonl")
		code, _, stderr := runMain(t, "batch", "-j", j, "--tools", fx, "--remote", strings.Join(addrs, ","), "-o", out, in)
		require.Equal(t, exitOK, code, stderr)
		got := outcomeLines(t, out)
		require.Len(t, got, len(want))
		for i := range want {
			if !assert.Equal(t, want[i], got[i], "-j %s, line %d", j, i) {
				break
			}
		}
	}
}

// TestBatchFleetDaemonDies: one of three daemons is killed while a batch
// runs: every job is accounted for, each exactly once; jobs that had not
// started ran elsewhere; a job whose program had made its tool call when
// its daemon died is reported lost with that call, and its call was made
// once — no job's call twice.
func TestBatchFleetDaemonDies(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	const n = 600
	for i := range n {
		fmt.Fprintf(&b, `{"id": %d, "code": "return await svc.slow(20, %d)"}`+"\n", i, i)
	}
	in, out, log := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "calls.log")
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	t.Setenv("FAKEDISPATCH_LOG", log)
	var addrs []string
	var victim *exec.Cmd
	for i := range 3 {
		cmd, a := startServe(t)
		addrs = append(addrs, a)
		if i == 1 {
			victim = cmd
		}
	}
	go func() { // at about half time
		for {
			time.Sleep(5 * time.Millisecond)
			if data, _ := os.ReadFile(log); strings.Count(string(data), "\n") >= n/2 {
				victim.Process.Kill()
				return
			}
		}
	}()
	code, _, stderr := runMain(t, "batch", "-j", "16", "--dispatch-cmd", selfAs(t, "fakedispatch"), "--providers", "svc",
		"--remote", strings.Join(addrs, ","), "-o", out, in)
	require.Contains(t, []int{exitOK, exitScript}, code, stderr)
	got := readLines(t, out)
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	made := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		made[line]++
	}
	lost := 0
	for i := range n {
		id := fmt.Sprint(i)
		ls := got[id]
		require.Len(t, ls, 1, "job %s is accounted for once", id)
		call := fmt.Sprintf("svc.slow [20,%d]", i)
		assert.LessOrEqual(t, made[call], 1, "job %s's call was made at most once", id)
		switch kindOf(ls[0]) {
		case "ok":
			assert.Equal(t, 1, made[call], "job %s", id)
		default:
			lost++
			assert.Equal(t, "internal", kindOf(ls[0]), "job %s", id)
			require.NotNil(t, ls[0].Error, "job %s", id)
			assert.Contains(t, ls[0].Error.Message, "svc.slow", "job %s says which call it had made", id)
		}
	}
	t.Logf("%d of %d jobs were in flight on the killed daemon", lost, n)
	assert.Positive(t, lost, "the daemon died with jobs in flight")
	assert.Less(t, lost, n/3, "only the jobs in flight on the killed daemon were lost")
}

// TestBatchRemoteRefused: an unreachable daemon, a token it refuses and a
// TLS mismatch are each a clear error before any job runs.
func TestBatchRemoteRefused(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"id": 1, "code": "return 1"}`+"\n"), 0o644))
	token, wrong := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	require.NoError(t, os.WriteFile(token, []byte("the right one\n"), 0o600))
	require.NoError(t, os.WriteFile(wrong, []byte("another\n"), 0o600))
	_, secured := startServe(t, "--token-file", token)
	_, plain := startServe(t)
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, selfSignedCA(t), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"unreachable", []string{"--remote", "127.0.0.1:1"}, "do not answer"},
		{"no token", []string{"--remote", secured}, "Unauthenticated"},
		{"wrong token", []string{"--remote", secured, "--remote-token-file", wrong}, "Unauthenticated"},
		{"TLS to a plaintext daemon", []string{"--remote", plain, "--remote-ca", ca}, "do not answer"},
		{"a token without --remote", []string{"--remote-token-file", token}, "go with --remote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			code, _, stderr := runMain(t, append([]string{"batch", "-o", out}, append(tc.args, in)...)...)
			assert.NotEqual(t, exitOK, code)
			assert.Contains(t, stderr, tc.says)
			b, _ := os.ReadFile(out)
			assert.Empty(t, strings.TrimSpace(string(b)), "no job ran")
		})
	}
	code, _, stderr := runMain(t, "batch", "-o", out, "--remote", secured, "--remote-token-file", token, in)
	require.Equal(t, exitOK, code, stderr)
}

// selfSignedCA is a CA certificate of a key nobody keeps (PEM): the
// daemons cannot prove themselves under it.
func selfSignedCA(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestBatchRemoteDNS: --remote dns://SERVER/NAME:PORT, a name whose A
// records are three daemons (127.0.0.1, .2 and .3 on one port, as a
// headless Service gives its pods), balances the programs across the
// three: each daemon's metrics count its share.
func TestBatchRemoteDNS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ips := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	var metrics []string
	for _, ip := range ips {
		cmd := exec.Command(selfAs(t, "codemode"), "serve", "--listen", fmt.Sprintf("%s:%d", ip, port), "--metrics", "127.0.0.1:0")
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		lines := logLines(stderr)
		metrics = append(metrics, addressIn(t, lines, `metrics on (http://\S+)`))
		go func() {
			for range lines {
			}
		}()
	}
	dns := serveDNS(t, "fleet.test.", ips)

	dir := t.TempDir()
	var b strings.Builder
	const n = 300
	for i := range n {
		fmt.Fprintf(&b, `{"id": %d, "code": "return %d"}`+"\n", i, i)
	}
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	code, _, stderr := runMain(t, "batch", "-j", "8", "--remote", fmt.Sprintf("dns://%s/fleet.test:%d", dns, port), "-o", out, in)
	require.Equal(t, exitOK, code, stderr)
	assert.Len(t, readLines(t, out), n)
	total := 0
	for i, m := range metrics {
		resp, err := http.Get(m)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c := 0
		if m := regexp.MustCompile(`codemode_programs_total\{kind="ok"\} (\d+)`).FindSubmatch(body); m != nil {
			c = atoi(t, string(m[1]))
		}
		t.Logf("daemon %s ran %d programs", ips[i], c)
		assert.Greater(t, c, n/6, "daemon %s has its share", ips[i])
		total += c
	}
	assert.Equal(t, n+1, total, "every program once, and the probe")
}

// serveDNS answers A queries for name with ips (and every other query
// with no answer) on a UDP port of 127.0.0.1 until the test ends; it
// returns its address.
func serveDNS(t *testing.T, name string, ips []string) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			if len(q) < 12 {
				continue
			}
			// The question: labels to a zero byte, then type and class.
			i, labels := 12, []string{}
			for i < len(q) && q[i] != 0 {
				l := int(q[i])
				if i+1+l > len(q) {
					break
				}
				labels = append(labels, string(q[i+1:i+1+l]))
				i += 1 + l
			}
			if i+5 > len(q) {
				continue
			}
			qtype := int(q[i+1])<<8 | int(q[i+2])
			question := q[12 : i+5]
			var answers []byte
			count := 0
			if strings.EqualFold(strings.Join(labels, ".")+".", name) && qtype == 1 {
				for _, ip := range ips {
					a := net.ParseIP(ip).To4()
					answers = append(answers, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4)
					answers = append(answers, a...)
					count++
				}
			}
			resp := []byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, byte(count), 0, 0, 0, 0}
			resp = append(append(resp, question...), answers...)
			pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestBatchFleetModes: --repeat, --record then --replay, and --resume work
// on the fleet as in process: the same outcome lines.
func TestBatchFleetModes(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, `{"id": %d, "code": "const r = await svc.echo(%d); return [r, Math.random(), new Date().getTime() > 0]"}`+"\n", i, i%3)
	}
	_, fx := fleetMix(t, t.TempDir())
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	_, a := startServe(t)
	_, c := startServe(t)
	fleet := strings.Join([]string{a, c}, ",")
	run := func(name string, args ...string) []string {
		t.Helper()
		out := filepath.Join(dir, name)
		code, _, stderr := runMain(t, append(append([]string{"batch", "-j", "8", "-o", out}, args...), in)...)
		require.Equal(t, exitOK, code, stderr)
		return outcomeLines(t, out)
	}
	tape := filepath.Join(dir, "tape.jsonl")
	// Recorded in process, replayed on the fleet and in process: the
	// tape's seeds make Math.random agree.
	run("recorded.jsonl", "--tools", fx, "--record", tape)
	local := run("local-replay.jsonl", "--replay", tape)
	assert.Equal(t, local, run("fleet-replay.jsonl", "--replay", tape, "--remote", fleet))
	// --repeat: every job twice on the fleet; as in process, the jobs
	// that read Math.random differ (a flaky job is what it finds), and
	// only those.
	var steady strings.Builder
	for i := range 200 {
		code := fmt.Sprintf("return [await svc.echo(%d), %d]", i%3, i)
		if i%4 == 0 {
			code = "return Math.random()"
		}
		fmt.Fprintf(&steady, `{"id": %d, "code": %q}`+"\n", i, code)
	}
	rin := filepath.Join(dir, "repeat-in.jsonl")
	require.NoError(t, os.WriteFile(rin, []byte(steady.String()), 0o644))
	for _, where := range [][]string{nil, {"--remote", fleet}} {
		out := filepath.Join(dir, "repeat.jsonl")
		code, _, stderr := runMain(t, append(append([]string{"batch", "-j", "8", "--repeat", "2", "--tools", fx, "-o", out}, where...), rin)...)
		require.Equal(t, exitOK, code, stderr)
		assert.Contains(t, stderr, "50 of 200 jobs differed", "%v", where)
	}
	// --resume: a half-written output is completed on the fleet.
	half := filepath.Join(dir, "half.jsonl")
	lines := strings.SplitAfter(strings.TrimSpace(string(mustRead(t, filepath.Join(dir, "local-replay.jsonl")))), "\n")
	require.NoError(t, os.WriteFile(half, []byte(strings.Join(lines[:100], "")), 0o644))
	code, _, stderr := runMain(t, "batch", "-j", "8", "--resume", "--replay", tape, "--remote", fleet, "-o", half, in)
	require.Equal(t, exitOK, code, stderr)
	assert.ElementsMatch(t, local, outcomeLines(t, half))
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestBatchFleetPolicy: under --policy and --key-file, a job that calls a
// tool requiring approval pauses on the fleet as in process, and its
// continuation (sealed on the client: the daemons never see the key)
// resumes with codemode resume in process.
func TestBatchFleetPolicy(t *testing.T) {
	dir := t.TempDir()
	in, out, policy, key := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "policy.json"),
		filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(in, []byte(`{"id": 1, "code": "return await svc.echo(1)"}`+"\n"+`{"id": 2, "code": "return 2"}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(policy, []byte(`{"tools": {"svc.echo": {"requires_approval": true}}}`), 0o644))
	require.NoError(t, os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o600))
	_, fx := fleetMix(t, t.TempDir())
	_, a := startServe(t)
	paused := func(where ...string) (map[string]any, []string) {
		code, _, stderr := runMain(t, append(append([]string{"batch", "--policy", policy, "--key-file", key, "--tools", fx, "-o", out}, where...), in)...)
		require.Equal(t, exitOK, code, stderr)
		lines := outcomeLines(t, out)
		require.Len(t, lines, 2)
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &l))
		p := l["paused"].(map[string]any)
		cont := p["continuation"].(string)
		delete(p, "continuation")
		delete(p, "expires")
		return l, []string{lines[1], cont}
	}
	local, lrest := paused()
	fleet, frest := paused("--remote", a)
	assert.Equal(t, local, fleet)
	assert.Equal(t, lrest[0], frest[0])
	contFile := filepath.Join(dir, "cont")
	require.NoError(t, os.WriteFile(contFile, []byte(frest[1]), 0o600))
	code, stdout, stderr := runMain(t, "resume", "--approve", "--key-file", key, "--policy", policy, "--tools", fx, contFile)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, `"result":"one"`)
}

// TestBatchFleetDefaults: a job that sets no limit runs on the fleet under
// the library's defaults, as it does in process, not the daemon's (a loop
// times out at 500 ms, not at codemode serve's 30 s).
func TestBatchFleetDefaults(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "jobs.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"id":1,"code":"for (;;) {}"}`+"\n"), 0o600))
	_, addr := startServe(t)
	for _, remote := range [][]string{nil, {"--remote", addr}} {
		out := filepath.Join(dir, "out.jsonl")
		code, _, stderr := runMain(t, append(append([]string{"batch", "-o", out}, remote...), in)...)
		require.Equal(t, exitOK, code, stderr)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"error":{"kind":"timeout","name":"run_js","deadline_ms":500}`, "remote %v", remote)
	}
}
