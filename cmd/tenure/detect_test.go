package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// TestDetection measures how long after a lock holder's client agent is
// killed (-9), stopped (SIGSTOP) or leaves gracefully its session is
// invalidated, on 3 servers and 2 client agents as real processes. The
// agent binary is TENURE_DETECT_AGENT (anything that takes Consul's agent
// flags: tenure, or a consul binary for the side-by-side column), default
// a fresh build of tenure. Rounds: TENURE_DETECT_ROUNDS (default 3). It is
// a measurement, run by `make bench-detect`, not part of `make test`:
//
//	make bench-detect AGENT=/path/to/consul ROUNDS=5
func TestDetection(t *testing.T) {
	if os.Getenv("TENURE_DETECT") == "" {
		t.Skip("set TENURE_DETECT=1 (make bench-detect) to measure failure detection")
	}
	bin := os.Getenv("TENURE_DETECT_AGENT")
	if bin == "" {
		bin = buildTenure(t, t.TempDir())
	}
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("TENURE_DETECT_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	results := map[string][]time.Duration{}
	for round := range rounds {
		for _, how := range []string{"kill -9", "SIGSTOP", "leave"} {
			var d time.Duration
			var err error
			// A fresh cluster each time; one whose processes could not
			// start (a port taken meanwhile) is tried again.
			for try := 0; try < 3; try++ {
				if d, err = detectOnce(t, bin, how); err == nil {
					break
				}
				t.Logf("round %d (%s): setting up failed, trying again: %v", round+1, how, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			results[how] = append(results[how], d)
			t.Logf("round %d: %s → session invalidated after %v", round+1, how, d.Round(10*time.Millisecond))
		}
	}
	fmt.Printf("\nsession invalidation after the holder's client agent is ... (%s, %d rounds)\n", filepath.Base(bin), rounds)
	fmt.Printf("%-10s %10s %10s %10s\n", "fault", "min", "median", "max")
	for _, how := range []string{"kill -9", "SIGSTOP", "leave"} {
		ds := results[how]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		fmt.Printf("%-10s %10v %10v %10v\n", how, ds[0].Round(10*time.Millisecond),
			ds[len(ds)/2].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond))
	}
}

// detectOnce starts 3 servers and 2 clients, has client A's session (the
// default: bound to A's serfHealth) hold a lock, applies the fault to A and
// returns how long until a server no longer lists the session. Every
// process it started is gone when it returns; an error means the cluster
// never came up.
func detectOnce(t *testing.T, bin, how string) (time.Duration, error) {
	t.Helper()
	var cleanups []func()
	defer func() {
		for _, c := range cleanups {
			c()
		}
	}()
	type proc struct {
		name, http, serf, server string
		cmd                      *exec.Cmd
	}
	var procs []*proc
	for i := range 5 {
		name := fmt.Sprintf("s%d", i+1)
		if i >= 3 {
			name = fmt.Sprintf("c%d", i-2)
		}
		procs = append(procs, &proc{name: name, http: freePort(t), serf: freePort(t), server: freePort(t)})
	}
	logDir, err := os.MkdirTemp("", "detect-logs")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range procs {
		args := []string{"agent", "-node", p.name, "-data-dir", filepath.Join(t.TempDir(), p.name), "-bind", "127.0.0.1",
			"-client", "127.0.0.1", "-http-port", port(p.http), "-serf-lan-port", port(p.serf), "-server-port", port(p.server),
			"-dns-port=-1", "-grpc-port=-1", "-grpc-tls-port=-1", "-serf-wan-port=-1", "-https-port=-1",
			"-retry-join", procs[0].serf, "-retry-interval", "1s", "-log-level", "debug"}
		if i < 3 {
			args = append(args, "-server", "-bootstrap-expect", "3")
		}
		p.cmd = exec.Command(bin, args...)
		f, err := os.Create(filepath.Join(logDir, p.name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		p.cmd.Stdout, p.cmd.Stderr = f, f
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cleanups = append(cleanups, func() {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			f.Close()
		})
	}
	apiOf := func(p *proc) *api.Client {
		c, err := api.NewClient(&api.Config{Address: p.http, Transport: &http.Transport{}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	holder, observer := apiOf(procs[3]), apiOf(procs[0])
	var sid string
	if err := poll(60*time.Second, func() error {
		var err error
		sid, _, err = holder.Session().Create(&api.SessionEntry{LockDelay: time.Millisecond}, nil)
		return err
	}); err != nil {
		return 0, fmt.Errorf("no session through client c1 (logs in %s): %w", logDir, err)
	}
	if ok, _, err := holder.KV().Acquire(&api.KVPair{Key: "detect/lock", Session: sid}, nil); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	start := time.Now()
	switch how {
	case "kill -9":
		_ = procs[3].cmd.Process.Kill()
	case "SIGSTOP":
		_ = procs[3].cmd.Process.Signal(syscall.SIGSTOP)
	case "leave":
		// SIGTERM: a client agent leaves gracefully, as Consul's does by
		// default (leave_on_terminate).
		_ = procs[3].cmd.Process.Signal(syscall.SIGTERM)
	}
	if err := poll(120*time.Second, func() error {
		s, _, err := observer.Session().Info(sid, &api.QueryOptions{AllowStale: false})
		if err != nil {
			return err
		}
		if s != nil {
			return fmt.Errorf("session %s still there", sid)
		}
		return nil
	}); err != nil {
		t.Fatalf("the holder's session was not invalidated (%s; logs in %s): %v", how, logDir, err)
	}
	d := time.Since(start)
	// The logs are kept only when something went wrong (the failures name
	// the directory); a measured round removes them once its processes are gone.
	cleanups = append(cleanups, func() { _ = os.RemoveAll(logDir) })
	return d, nil
}

// poll calls cond every 10 ms until it succeeds or limit passes.
func poll(limit time.Duration, cond func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
