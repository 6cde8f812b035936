package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/internal/proccluster"
)

// TestCrashLoop kill -9s and restarts leaders and followers of a durable
// three-process cluster, one at a time, while clients write keys, bump
// counters with check-and-set and run lock cycles. Afterwards every node must
// be back and every acknowledged write readable through each of them.
//
// With TENURE_CLUSTER_TEST=1 it runs a short loop (make test); `make chaos`
// sets TENURE_CHAOS_KILLS for a long one, and TENURE_CHAOS_SEED picks the
// kill schedule (victims and pauses).
func TestCrashLoop(t *testing.T) {
	kills := 4
	if s := os.Getenv("TENURE_CHAOS_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TENURE_CHAOS_KILLS=%q: want a positive number", s)
		}
		kills = n
	} else if os.Getenv("TENURE_CLUSTER_TEST") == "" {
		t.Skip("set TENURE_CLUSTER_TEST=1 (short loop) or TENURE_CHAOS_KILLS=N (make chaos)")
	}
	seed := uint64(1)
	if s := os.Getenv("TENURE_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TENURE_CHAOS_SEED=%q: %v", s, err)
		}
		seed = n
	}
	rng := rand.New(rand.NewPCG(seed, 0))

	cl := proccluster.Up(t, proccluster.BuildTenure(t), proccluster.Options{LogLevel: "debug"})

	ctx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// However the test ends, the load stops before the cluster does
	// (cleanups run last registered first).
	t.Cleanup(func() {
		stopLoad()
		wg.Wait()
	})
	ledgers := make([]*chaosLedger, 4)
	for w := range ledgers {
		ledgers[w] = newChaosLedger(w)
		clients := chaosClients(t, cl)
		wg.Go(func() { ledgers[w].run(ctx, clients) })
	}

	start := time.Now()
	for k := 1; k <= kills; k++ {
		lead := cl.Leader((k + 1) % 3)
		victim := lead
		role := "leader"
		if rng.IntN(2) == 0 {
			victim = (lead + 1 + rng.IntN(2)) % 3
			role = "follower"
		}
		// Let writes be in flight when the process dies.
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		cl.Kill(victim)
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		// A node that cannot open its data directory after the crash dies
		// at once, which WaitReady reports with its log.
		cl.Start(victim)
		cl.WaitReady(victim)
		acked := 0
		for _, l := range ledgers {
			acked += l.ackedCount()
		}
		fmt.Fprintf(os.Stderr, "chaos: kill %d/%d (%s %s) survived; %d writes acknowledged; %s elapsed\n",
			k, kills, role, cl.Nodes[victim].Name(), acked, time.Since(start).Round(time.Second))
	}
	stopLoad()
	wg.Wait()

	for i := range cl.Nodes {
		cl.WaitReady(i)
	}
	verified := 0
	clients := chaosClients(t, cl)
	for i, nd := range cl.Nodes {
		for _, l := range ledgers {
			cl.Eventually(fmt.Sprintf("%s holding worker %d's acknowledged writes", nd.Name(), l.worker), func() error {
				return l.verify(clients[i])
			})
		}
	}
	for _, l := range ledgers {
		verified += l.ackedCount()
	}
	for i, nd := range cl.Nodes {
		b, err := os.ReadFile(nd.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("panic:")) {
			t.Errorf("%s panicked:\n%s", nd.Name(), b)
		}
		cl.Stop(i)
	}
	fmt.Fprintf(os.Stderr, "chaos: seed %d: kills survived: %d, acknowledged writes verified on every node: %d, in %s\n",
		seed, kills, verified, time.Since(start).Round(time.Second))
}

// chaosLedger is one client's record of what the cluster acknowledged.
type chaosLedger struct {
	worker int
	mu     sync.Mutex
	// keys are written once each; an acknowledged one must exist with its
	// value, an unacknowledged one may or may not.
	keys map[string]string
	// counter is bumped by check-and-set: it must end at or above the last
	// acknowledged value and at or below the last attempted one.
	counterAcked, counterTried uint64
	// acquires counts acknowledged acquires of the worker's lock key, each
	// by a fresh session, so its LockIndex must be at least that.
	acquires uint64
}

func newChaosLedger(worker int) *chaosLedger {
	return &chaosLedger{worker: worker, keys: map[string]string{}}
}

func (l *chaosLedger) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys) + int(l.counterAcked) + int(l.acquires)
}

func (l *chaosLedger) counterKey() string { return fmt.Sprintf("chaos/%d/counter", l.worker) }
func (l *chaosLedger) lockKey() string    { return fmt.Sprintf("chaos/%d/lock", l.worker) }

// run writes until ctx ends, through a node picked in turn; an error just
// moves on (the node may be down).
func (l *chaosLedger) run(ctx context.Context, clients []*api.Client) {
	for seq := 0; ctx.Err() == nil; seq++ {
		c := clients[(seq+l.worker)%len(clients)]
		switch seq % 3 {
		case 0:
			k, v := fmt.Sprintf("chaos/%d/key/%06d", l.worker, seq), fmt.Sprintf("v%d", seq)
			if _, err := c.KV().Put(&api.KVPair{Key: k, Value: []byte(v)}, nil); err == nil {
				l.mu.Lock()
				l.keys[k] = v
				l.mu.Unlock()
			}
		case 1:
			l.bumpCounter(c)
		case 2:
			l.lockCycle(c)
		}
	}
}

func (l *chaosLedger) bumpCounter(c *api.Client) {
	p, _, err := c.KV().Get(l.counterKey(), nil)
	if err != nil {
		return
	}
	var cur uint64
	var idx uint64
	if p != nil {
		if cur, err = strconv.ParseUint(string(p.Value), 10, 64); err != nil {
			return
		}
		idx = p.ModifyIndex
	}
	next := cur + 1
	l.mu.Lock()
	l.counterTried = max(l.counterTried, next)
	l.mu.Unlock()
	ok, _, err := c.KV().CAS(&api.KVPair{Key: l.counterKey(), Value: []byte(strconv.FormatUint(next, 10)), ModifyIndex: idx}, nil)
	if err == nil && ok {
		l.mu.Lock()
		l.counterAcked = max(l.counterAcked, next)
		l.mu.Unlock()
	}
}

func (l *chaosLedger) lockCycle(c *api.Client) {
	// No checks: a killed node's serfHealth must not end the session
	// between the acquire and its count.
	sid, _, err := c.Session().CreateNoChecks(&api.SessionEntry{TTL: "30s"}, nil)
	if err != nil {
		return
	}
	ok, _, err := c.KV().Acquire(&api.KVPair{Key: l.lockKey(), Session: sid}, nil)
	if err == nil && ok {
		l.mu.Lock()
		l.acquires++
		l.mu.Unlock()
		_, _, _ = c.KV().Release(&api.KVPair{Key: l.lockKey(), Session: sid}, nil)
	}
	_, _ = c.Session().Destroy(sid, nil)
}

// verify reads through c and returns the first acknowledged write missing.
func (l *chaosLedger) verify(c *api.Client) error {
	q := &api.QueryOptions{AllowStale: true}
	pairs, _, err := c.KV().List(fmt.Sprintf("chaos/%d/", l.worker), q)
	if err != nil {
		return err
	}
	final := map[string]*api.KVPair{}
	for _, p := range pairs {
		final[p.Key] = p
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return checkLedger(l.keys, l.counterAcked, l.counterTried, l.acquires, final, l.counterKey(), l.lockKey())
}

// checkLedger compares what was acknowledged with what a node holds.
func checkLedger(keys map[string]string, counterAcked, counterTried, acquires uint64,
	final map[string]*api.KVPair, counterKey, lockKey string) error {
	for k, v := range keys {
		p := final[k]
		if p == nil {
			return fmt.Errorf("acknowledged write %s is missing", k)
		}
		if string(p.Value) != v {
			return fmt.Errorf("%s = %q, acknowledged %q", k, p.Value, v)
		}
	}
	if counterAcked > 0 {
		p := final[counterKey]
		if p == nil {
			return fmt.Errorf("counter %s missing, acknowledged %d", counterKey, counterAcked)
		}
		n, err := strconv.ParseUint(string(p.Value), 10, 64)
		if err != nil || n < counterAcked || n > counterTried {
			return fmt.Errorf("counter %s = %q, acknowledged %d, tried up to %d", counterKey, p.Value, counterAcked, counterTried)
		}
	}
	if acquires > 0 {
		p := final[lockKey]
		if p == nil || p.LockIndex < acquires {
			return fmt.Errorf("lock %s = %+v after %d acknowledged acquires", lockKey, p, acquires)
		}
	}
	return nil
}

// chaosClients returns a client per node that gives up on a dead node
// quickly instead of hanging the worker.
func chaosClients(t *testing.T, cl *proccluster.Cluster) []*api.Client {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	var out []*api.Client
	for _, nd := range cl.Nodes {
		c, err := api.NewClient(&api.Config{Address: nd.HTTPAddr(), HttpClient: hc})
		if err != nil {
			t.Fatalf("client for %s: %v", nd.Name(), err)
		}
		out = append(out, c)
	}
	return out
}

// TestCheckLedgerCatchesLoss shows the crash loop's verifier failing on each
// kind of loss it exists to find.
func TestCheckLedgerCatchesLoss(t *testing.T) {
	final := func() map[string]*api.KVPair {
		return map[string]*api.KVPair{
			"k/1":     {Key: "k/1", Value: []byte("a")},
			"counter": {Key: "counter", Value: []byte("5")},
			"lock":    {Key: "lock", LockIndex: 3},
		}
	}
	keys := map[string]string{"k/1": "a"}
	if err := checkLedger(keys, 5, 6, 3, final(), "counter", "lock"); err != nil {
		t.Fatalf("an intact ledger failed: %v", err)
	}
	for name, mutate := range map[string]func(m map[string]*api.KVPair){
		"write lost":          func(m map[string]*api.KVPair) { delete(m, "k/1") },
		"write rolled back":   func(m map[string]*api.KVPair) { m["k/1"] = &api.KVPair{Key: "k/1", Value: []byte("old")} },
		"counter lost":        func(m map[string]*api.KVPair) { delete(m, "counter") },
		"counter went back":   func(m map[string]*api.KVPair) { m["counter"] = &api.KVPair{Value: []byte("4")} },
		"counter past tries":  func(m map[string]*api.KVPair) { m["counter"] = &api.KVPair{Value: []byte("7")} },
		"lock index lost":     func(m map[string]*api.KVPair) { m["lock"] = &api.KVPair{LockIndex: 2} },
		"lock key lost":       func(m map[string]*api.KVPair) { delete(m, "lock") },
		"counter not numeric": func(m map[string]*api.KVPair) { m["counter"] = &api.KVPair{Value: []byte("x")} },
	} {
		m := final()
		mutate(m)
		if err := checkLedger(keys, 5, 6, 3, m, "counter", "lock"); err == nil {
			t.Errorf("%s: not reported", name)
		}
	}
}
