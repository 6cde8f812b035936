package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal kills the agent if the shim dies without stopping it
// (a test binary killed on timeout), so no agent outlives the suite.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
