//go:build unix

package lockcmd

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runChild starts o's command and returns its stdout once it has exited.
func runChild(t *testing.T, o *options) string {
	t.Helper()
	var out bytes.Buffer
	ch, err := startChild(o, nil, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-ch.done; err != nil {
		t.Fatalf("child: %v", err)
	}
	return out.String()
}

// TestChildShell: with -shell the command runs through $SHELL -c, or
// /bin/sh when SHELL is empty; without it, the words are the argv.
func TestChildShell(t *testing.T) {
	wrapper := filepath.Join(t.TempDir(), "wrapsh")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho via-wrapper\nexec /bin/sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shell string
		o     options
		want  string
	}{
		{wrapper, options{shell: true, child: []string{"echo", "hi;", "echo", "there"}}, "via-wrapper\nhi\nthere\n"},
		{"", options{shell: true, child: []string{"echo", "hi;", "echo", "there"}}, "hi\nthere\n"},
		{wrapper, options{child: []string{"echo", "hi;", "echo there"}}, "hi; echo there\n"},
	} {
		t.Setenv("SHELL", tc.shell)
		if got := runChild(t, &tc.o); got != tc.want {
			t.Errorf("SHELL=%q %+v: output %q, want %q", tc.shell, tc.o, got, tc.want)
		}
	}
}

// gone reports whether pid has exited (a zombie counts: it runs no more).
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	return strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}

// TestChildTerminateSignalsGroup: terminate signals the child's whole
// process group, so a command's own children stop with it and none keeps
// running without the lock. (The grandchild's output goes elsewhere so
// that the child's Wait does not wait for it.)
func TestChildTerminateSignalsGroup(t *testing.T) {
	out := newOutput()
	ch, err := startChild(&options{shell: true, child: []string{"sleep 1000 >/dev/null 2>&1 & echo grandchild=$!; wait"}}, nil, out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m := out.await(t, regexp.MustCompile(`grandchild=(\d+)`), 10*time.Second)
	pid, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	ch.terminate(DefaultKillGrace)
	if !gone(ch.cmd.Process.Pid) {
		t.Error("child still running after terminate")
	}
	// A hang guard, not a timing assertion: signalled, the grandchild
	// exits at once; only an unsignalled one would still be here.
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running after the child was terminated", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
