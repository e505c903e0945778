// Package proc reads what the soaks assert about the process: its
// resident set and open file descriptors, from /proc (Linux).
package proc

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// RSS is the process's resident set in bytes, after Go's free heap is
// returned to the OS (what Go keeps is not the sandboxes' to answer for).
func RSS() (int64, error) {
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}

// OpenFDs counts the process's open file descriptors.
func OpenFDs() (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	return len(fds), err
}

// Settle waits up to 30 s for cond, polling; it reports the last answer.
func Settle(cond func() bool) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
