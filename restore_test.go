package codemode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWrittenPageRestores: where the kernel reports written pages, a warm
// slot's restores copy back only what runs wrote (a few of an image's
// pages), and every run still starts from the pristine sandbox: runs that
// rewrite the intrinsics, the global object and the heap (a collection
// writes every object's header), that fail, or that switch the slot
// between images, across several rounds of re-protection, never see what
// an earlier run left. Where the kernel lacks it the mode says why.
func TestWrittenPageRestores(t *testing.T) {
	if checkedMode {
		t.Skip("checked mode builds every sandbox afresh: nothing is restored")
	}
	st := SandboxRestores()
	if st.Mode == "copy" {
		require.NotEmpty(t, st.Reason, "copy mode says why")
		t.Skipf("restores copy whole images here: %s", st.Reason)
	}
	require.Equal(t, "written-pages", st.Mode)
	// The runs that must succeed have all the time they need; the loops
	// among the spoilers end by their own context's 50 ms.
	e := newExecutor(t, WithLimits(Limits{Memory: 32 << 20, Deadline: time.Minute}))
	ctx := context.Background()
	for range 10 { // past the 8 whole restores after which a slot protects its image (WP_AFTER)
		_, err := e.Run(ctx, `return 1`)
		require.NoError(t, err)
	}
	before := SandboxRestores()
	const runs = 60
	for range runs {
		_, err := e.Run(ctx, `return {ok: true}`)
		require.NoError(t, err)
	}
	after := SandboxRestores()
	written, pages := after.Written-before.Written, after.Pages-before.Pages
	require.GreaterOrEqual(t, written, int64(runs/2), "warm restores copy written pages only")
	per := float64(pages) / float64(written)
	t.Logf("a tiny run's restore copied %.1f pages", per)
	assert.Less(t, per, 20.0, "a tiny run writes a few of the image's ~28 pages")

	// What runs leave behind, a check that it is gone, and the state a
	// fresh sandbox has.
	const pristine = `return [typeof globalThis.leak, Object.prototype.leak, Array.prototype.push.name,
  Math.max(1, 2), JSON.stringify({a: [1]}), typeof String.prototype.trim, Object.keys(globalThis).length]`
	want, err := e.Run(ctx, pristine)
	require.NoError(t, err)
	spoilers := []string{
		`globalThis.leak = 1; Object.prototype.leak = 2; Array.prototype.push = function nope() {};
Math.max = () => 0; JSON.stringify = () => "x"; delete String.prototype.trim; return 1`,
		// A heap large enough to collect: every object's header is written.
		`const a = []; for (let i = 0; i < 100000; i++) a.push({i, s: "x" + i}); globalThis.leak = a; return a.length`,
		`globalThis.leak = 1; for (;;) {}`,
		`globalThis.leak = 1; throw new Error("x")`,
		`globalThis.leak = []; for (;;) globalThis.leak.push(new Array(1e5).fill(1))`,
	}
	// Past two rounds of re-protection (every 64 restores of an image),
	// then switching images between runs.
	for i := range 140 {
		sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		e.Run(sctx, spoilers[i%len(spoilers)]) //nolint:errcheck // some fail by design
		cancel()
		got, err := e.Run(ctx, pristine)
		require.NoError(t, err)
		require.JSONEq(t, string(want.Value), string(got.Value), "after run %d, spoiler %d", i, i%len(spoilers))
		if i >= 130 { // another image in the same slot (an Execute program's), then back
			res := e.Execute(ctx, Request{Code: `async () => { globalThis.leak2 = 1; return typeof leak }`})
			require.Empty(t, res.Error)
			require.JSONEq(t, `"undefined"`, string(res.Result), fmt.Sprintf("run %d", i))
		}
	}
}
