package lockcmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

func uniq(p string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "lockcmd-test/" + p + "-" + hex.EncodeToString(b)
}

// output is a goroutine-safe writer that lets a test wait for text.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return n, err
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// await returns the first match of re, waiting up to d (a hang guard).
func (o *output) await(t *testing.T, re *regexp.Regexp, d time.Duration) []string {
	t.Helper()
	deadline := time.After(d)
	for {
		o.mu.Lock()
		m := re.FindStringSubmatch(o.buf.String())
		ch := o.changed
		o.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %q in output after %v: %q", re, d, o.String())
		}
	}
}

// start runs Run in the background; the returned channel yields its result.
func start(ctx context.Context, args ...string) (chan int, *output, *output) {
	out, errOut := newOutput(), newOutput()
	done := make(chan int, 1)
	go func() { done <- Run(ctx, args, out, errOut) }()
	return done, out, errOut
}

func wait(t *testing.T, done chan int, d time.Duration, stderr *output) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(d):
		t.Fatalf("tenure lock still running after %v; stderr %q", d, stderr.String())
		return -1
	}
}

// loopChild prints its lock environment and then runs until signalled,
// reporting SIGTERM.
const loopChild = `trap 'echo got-TERM; exit 143' TERM; echo "held=$CONSUL_LOCK_HELD key=$TENURE_LOCK_KEY index=$TENURE_LOCK_INDEX session=$TENURE_LOCK_SESSION end"; while :; do sleep 0.05; done`

var envLine = regexp.MustCompile(`held=(\S*) key=(\S*) index=(\d+) session=(\S+) end`)

// TestLockChildTerminatedOnLoss: the child runs with its sequencer in the
// environment; destroying the session from outside makes tenure lock
// SIGTERM the child and exit 1.
func TestLockChildTerminatedOnLoss(t *testing.T) {
	addr := agenttest.Addr(t)
	prefix := uniq("loss")
	done, stdout, stderr := start(context.Background(), "-http-addr", addr, "-ttl", "10s", "-lock-delay", "0s", prefix, loopChild)
	m := stdout.await(t, envLine, 30*time.Second)
	if m[1] != "true" || m[2] != prefix+"/.lock" || m[3] == "0" {
		t.Errorf("child environment %q", m[0])
	}
	c, err := api.NewClient(&api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Session().Destroy(m[4], nil); err != nil {
		t.Fatal(err)
	}
	code := wait(t, done, 15*time.Second, stderr)
	if code != 1 {
		t.Errorf("exit %d after losing the lock, want 1; stderr %q", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "got-TERM") {
		t.Errorf("child was not sent SIGTERM; stdout %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "lock lost") {
		t.Errorf("stderr %q does not report the loss", stderr.String())
	}
}

// TestLockExitStatus: 0 when the child finishes, 2 with -child-exit-code
// when it fails, 0 without; 1 for usage errors.
func TestLockExitStatus(t *testing.T) {
	addr := agenttest.Addr(t)
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"true"}, 0},
		{[]string{"exit 3"}, 0},
		{[]string{"-child-exit-code", "exit 3"}, 2},
		{[]string{"-child-exit-code", "-n", "2", "exit 3"}, 2},
		{[]string{"-n", "2", `test -n "$TENURE_LOCK_ADMIT_INDEX"`}, 0},
		{[]string{"-child-exit-code", "-n", "2", `test -z "$TENURE_LOCK_ADMIT_INDEX"`}, 2},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var args []string
			args = append(args, "-http-addr", addr, "-lock-delay", "0s")
			last := len(tc.args) - 1
			args = append(args, tc.args[:last]...)
			args = append(args, uniq("exit"), tc.args[last])
			out, errOut := newOutput(), newOutput()
			if got := Run(context.Background(), args, out, errOut); got != tc.want {
				t.Errorf("exit %d, want %d; stderr %q", got, tc.want, errOut.String())
			}
		})
	}
	for _, bad := range [][]string{{}, {"prefix"}, {"-n", "0", "p", "true"}, {"-ttl", "-1s", "p", "true"}, {"-bogus", "p", "true"}, {"/", "true"}} {
		if got := Run(context.Background(), bad, newOutput(), newOutput()); got != 1 {
			t.Errorf("Run(%q) = %d, want 1", bad, got)
		}
	}
}

// TestLockTimeoutAndInterrupt: a second tenure lock on a held prefix gives
// up after -timeout with exit 1; cancelling the first (an interrupt)
// terminates its child and exits 1.
func TestLockTimeoutAndInterrupt(t *testing.T) {
	addr := agenttest.Addr(t)
	prefix := uniq("timeout")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, stdout, stderr := start(ctx, "-http-addr", addr, "-lock-delay", "0s", prefix, loopChild)
	stdout.await(t, envLine, 30*time.Second)

	out2, err2 := newOutput(), newOutput()
	if code := Run(context.Background(), []string{"-http-addr", addr, "-timeout", "300ms", prefix, "echo ran"}, out2, err2); code != 1 {
		t.Errorf("contended lock exit %d, want 1", code)
	}
	if strings.Contains(out2.String(), "ran") || !strings.Contains(err2.String(), "shutdown triggered or timeout during lock acquisition") {
		t.Errorf("contended run: stdout %q stderr %q", out2.String(), err2.String())
	}

	cancel()
	if code := wait(t, done, 15*time.Second, stderr); code != 1 {
		t.Errorf("interrupted exit %d, want 1", code)
	}
	if !strings.Contains(stdout.String(), "got-TERM") {
		t.Errorf("interrupted child not sent SIGTERM; stdout %q", stdout.String())
	}
	// Released and cleaned up: the prefix is free again at once.
	if code := Run(context.Background(), []string{"-http-addr", addr, "-timeout", "5s", prefix, "true"}, newOutput(), newOutput()); code != 0 {
		t.Errorf("lock after release exit %d, want 0", code)
	}
}

// TestLockAcquisitionFailure: an acquire that fails for another reason
// than -timeout or an interrupt says so, with the reason: here the prefix's
// .lock exists with flags that are not a lock's. No -timeout: Run cancels
// the acquire's context before asking why it failed, so with -timeout every
// failure currently reads as a timeout.
func TestLockAcquisitionFailure(t *testing.T) {
	addr := agenttest.Addr(t)
	prefix := uniq("conflict")
	c, err := api.NewClient(&api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KV().Put(&api.KVPair{Key: prefix + "/.lock", Flags: 7}, nil); err != nil {
		t.Fatal(err)
	}
	// With and without -timeout: a refusal well inside the timeout is
	// reported as the failure it is, not as the timeout.
	for _, extra := range [][]string{nil, {"-timeout", "1m"}} {
		out, errOut := newOutput(), newOutput()
		args := append(append([]string{"-http-addr", addr}, extra...), prefix, "echo ran")
		if code := Run(context.Background(), args, out, errOut); code != 1 {
			t.Errorf("%v: exit %d, want 1", extra, code)
		}
		if got := errOut.String(); out.String() != "" || !strings.Contains(got, "lock acquisition failed") || !strings.Contains(got, "flags") || strings.Contains(got, "shutdown triggered") {
			t.Errorf("%v: stdout %q, stderr %q: want the acquisition failure and its reason", extra, out.String(), got)
		}
	}
}

// TestLockVerbose: -verbose reports the sequencer held and the child's
// end on stderr; without it tenure lock is silent.
func TestLockVerbose(t *testing.T) {
	addr := agenttest.Addr(t)
	for _, verbose := range []bool{true, false} {
		prefix := uniq("verbose")
		args := []string{"-http-addr", addr, "-lock-delay", "0s", prefix, "true"}
		if verbose {
			args = append([]string{"-verbose"}, args...)
		}
		out, errOut := newOutput(), newOutput()
		if code := Run(context.Background(), args, out, errOut); code != 0 {
			t.Fatalf("exit %d; stderr %q", code, errOut.String())
		}
		held := regexp.MustCompile(`(?m)^tenure lock: lock held: TENURE_LOCK_KEY=` + regexp.QuoteMeta(prefix) + `/\.lock TENURE_LOCK_INDEX=\d+ TENURE_LOCK_SESSION=\S+ TENURE_LOCK_MODIFY_INDEX=\d+\ntenure lock: child exited: <nil>\n$`)
		if got := errOut.String(); verbose != held.MatchString(got) || !verbose && got != "" {
			t.Errorf("verbose=%v: stderr %q", verbose, got)
		}
	}
}

// TestLockDelayFlag: the session carries -lock-delay, 15s by default (as
// consul lock), and none at all for 0s (not the server's 15s default).
func TestLockDelayFlag(t *testing.T) {
	addr := agenttest.Addr(t)
	c, err := api.NewClient(&api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 15 * time.Second},
		{[]string{"-lock-delay", "0s"}, 0},
		{[]string{"-lock-delay", "3s"}, 3 * time.Second},
	} {
		t.Run(fmt.Sprint(tc.want), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			args := append(append([]string{"-http-addr", addr}, tc.args...), uniq("delay"), loopChild)
			done, stdout, stderr := start(ctx, args...)
			m := stdout.await(t, envLine, 30*time.Second)
			e, _, err := c.Session().Info(m[4], nil)
			if err != nil || e == nil {
				t.Fatalf("session %s: %+v, %v", m[4], e, err)
			}
			if e.LockDelay != tc.want {
				t.Errorf("%q: session lock-delay %v, want %v", tc.args, e.LockDelay, tc.want)
			}
			cancel()
			wait(t, done, 15*time.Second, stderr)
		})
	}
}

// TestLockChildAgentAddress: the child reaches the same agent as tenure
// lock: CONSUL_HTTP_ADDR is -http-addr when given, else inherited.
func TestLockChildAgentAddress(t *testing.T) {
	addr := agenttest.Addr(t)
	for _, flag := range []bool{true, false} {
		args := []string{"-lock-delay", "0s", uniq("addr"), `echo "addr=$CONSUL_HTTP_ADDR"`}
		if flag {
			args = append([]string{"-http-addr", addr}, args...)
			t.Setenv("CONSUL_HTTP_ADDR", "127.0.0.1:1")
		} else {
			t.Setenv("CONSUL_HTTP_ADDR", addr)
		}
		out, errOut := newOutput(), newOutput()
		if code := Run(context.Background(), args, out, errOut); code != 0 {
			t.Fatalf("exit %d; stderr %q", code, errOut.String())
		}
		if got := out.String(); got != "addr="+addr+"\n" {
			t.Errorf("-http-addr given %v: child saw %q, want %s", flag, got, addr)
		}
	}
}

func TestMain(m *testing.M) { os.Exit(agenttest.Main(m)) }
