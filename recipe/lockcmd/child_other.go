//go:build !unix

package lockcmd

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// child is the running command. Without POSIX signals and process groups
// the child is killed outright, as consul lock does on Windows.
type child struct {
	cmd  *exec.Cmd
	done chan error
	err  error
}

func startChild(o *options, env []string, stdout, stderr io.Writer) (*child, error) {
	var cmd *exec.Cmd
	if o.shell {
		cmd = exec.Command("cmd", "/C", strings.Join(o.child, " "))
	} else {
		cmd = exec.Command(o.child[0], o.child[1:]...)
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if o.passStdin {
		cmd.Stdin = os.Stdin
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start child: %w", err)
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c, nil
}

func (c *child) terminate(time.Duration) {
	_ = c.cmd.Process.Kill()
	c.err = <-c.done
}
