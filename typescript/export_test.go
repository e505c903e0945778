package typescript

import "os"

// KillChecker kills a checker's process (tests).
func KillChecker(c *Checker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		c.proc.cmd.Process.Kill()
		<-c.proc.dead
	}
}

// KillMidCheck makes the next check kill its process once its files are
// open, before it asks for the diagnostics (tests; not concurrent ones).
func KillMidCheck() {
	midCheck = func(pid int) {
		midCheck = nil
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	}
}

// CheckerPID is the checker process's pid, or 0 (tests).
func CheckerPID(c *Checker) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return 0
	}
	return c.proc.cmd.Process.Pid
}
