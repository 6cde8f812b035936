package bench

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/internal/proccluster"
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
		bin = proccluster.BuildTenure(t)
	}
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("TENURE_DETECT_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	results := map[string][]time.Duration{}
	for round := range rounds {
		for _, how := range []string{"kill -9", "SIGSTOP", "leave"} {
			// A fresh cluster each time.
			d := detectOnce(t, bin, how)
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

// detectOnce starts 3 servers and 2 client agents, has client c1's
// session (the default: bound to c1's serfHealth) hold a lock, applies the
// fault to c1 and returns how long until a server no longer lists the
// session. Every process it started is gone when it returns.
func detectOnce(t *testing.T, bin, how string) time.Duration {
	t.Helper()
	cl := proccluster.Up(t, bin, proccluster.Options{Clients: 2, LogLevel: "debug"})
	defer cl.Close()
	holderNode := cl.Nodes[3]
	holder, observer := detectClient(t, holderNode.HTTPAddr()), detectClient(t, cl.Nodes[0].HTTPAddr())
	sid, _, err := holder.Session().Create(&api.SessionEntry{LockDelay: time.Millisecond}, nil)
	if err != nil {
		t.Fatalf("session through client %s: %v", holderNode.Name(), err)
	}
	if ok, _, err := holder.KV().Acquire(&api.KVPair{Key: "detect/lock", Session: sid}, nil); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	start := time.Now()
	switch how {
	case "kill -9":
		err = holderNode.Proc.Kill()
	case "SIGSTOP":
		err = holderNode.Proc.Pause()
	case "leave":
		// SIGTERM: a client agent leaves gracefully, as Consul's does by
		// default (leave_on_terminate).
		err = holderNode.Proc.Signal(syscall.SIGTERM)
	}
	if err != nil {
		t.Fatalf("%s: %v", how, err)
	}
	if err := proccluster.Poll(120*time.Second, func() error {
		s, _, err := observer.Session().Info(sid, &api.QueryOptions{AllowStale: false})
		if err != nil {
			return err
		}
		if s != nil {
			return fmt.Errorf("session %s still there", sid)
		}
		return nil
	}); err != nil {
		t.Fatalf("the holder's session was not invalidated (%s): %v", how, err)
	}
	return time.Since(start)
}

func detectClient(t *testing.T, addr string) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: addr, Transport: &http.Transport{}})
	if err != nil {
		t.Fatalf("client of %s: %v", addr, err)
	}
	return c
}
