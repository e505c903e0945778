package typescript

// KillChecker kills a checker's process (tests).
func KillChecker(c *Checker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		c.proc.cmd.Process.Kill()
		<-c.proc.dead
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
