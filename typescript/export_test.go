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
