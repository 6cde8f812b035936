//go:build !linux

package main

import "os/exec"

// setParentDeathSignal: only Linux can tie the agent's life to the shim's.
func setParentDeathSignal(*exec.Cmd) {}
