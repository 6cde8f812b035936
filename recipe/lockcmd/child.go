//go:build unix

package lockcmd

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is the running command.
type child struct {
	cmd  *exec.Cmd
	done chan error // receives cmd.Wait's result once
	err  error      // that result, after done was drained by terminate
}

// startChild starts the command in its own process group, so that a shell's
// children are signalled with it.
func startChild(o *options, env []string, stdout, stderr io.Writer) (*child, error) {
	var cmd *exec.Cmd
	if o.shell {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		cmd = exec.Command(sh, "-c", strings.Join(o.child, " "))
	} else {
		cmd = exec.Command(o.child[0], o.child[1:]...)
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if o.passStdin {
		cmd.Stdin = os.Stdin
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start child: %w", err)
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c, nil
}

// terminate sends SIGTERM to the child's group, then SIGKILL if it has not
// exited after grace, and waits for it.
func (c *child) terminate(grace time.Duration) {
	pg := -c.cmd.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case c.err = <-c.done:
		// The leader is gone; anything left in its group would act
		// without the lock, so it goes too.
		_ = syscall.Kill(pg, syscall.SIGKILL)
		return
	case <-t.C:
	}
	_ = syscall.Kill(pg, syscall.SIGKILL)
	c.err = <-c.done
}
