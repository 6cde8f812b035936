package simnet

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// testFSM records applied command values in order.
type testFSM struct {
	mu   sync.Mutex
	vals []uint64
}

func (f *testFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) != 8 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vals = append(f.vals, binary.BigEndian.Uint64(l.Data))
	return len(f.vals)
}

func (f *testFSM) values() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.vals)
}

func (f *testFSM) Snapshot() (raft.FSMSnapshot, error) { return fsmSnap(f.values()), nil }

func (f *testFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	vals := make([]uint64, len(b)/8)
	for i := range vals {
		vals[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vals = vals
	return nil
}

type fsmSnap []uint64

func (s fsmSnap) Persist(sink raft.SnapshotSink) error {
	b := make([]byte, 0, 8*len(s))
	for _, v := range s {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	if _, err := sink.Write(b); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (fsmSnap) Release() {}

// cluster is a raft cluster on one Network, all inside the caller's bubble.
type cluster struct {
	t     *testing.T
	net   *Network
	trace *trace
	names []string
	rafts []*raft.Raft
	fsms  []*testFSM
}

func newCluster(t *testing.T, size int, opts Options, tweak func(*raft.Config)) *cluster {
	t.Helper()
	n, tr := newNet(t, opts)
	c := &cluster{t: t, net: n, trace: tr}
	var servers []raft.Server
	for i := range size {
		name := fmt.Sprintf("n%d", i+1)
		c.names = append(c.names, name)
		servers = append(servers, raft.Server{ID: raft.ServerID(name), Address: raft.ServerAddress(name)})
	}
	for _, name := range c.names {
		cfg := raft.DefaultConfig()
		cfg.LocalID = raft.ServerID(name)
		cfg.Logger = hclog.NewNullLogger()
		if tweak != nil {
			tweak(cfg)
		}
		trans := newTrans(t, n, name)
		logs, stable, snaps := raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(cfg, logs, stable, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		fsm := &testFSM{}
		r, err := raft.NewRaft(cfg, fsm, logs, stable, snaps, trans)
		if err != nil {
			t.Fatal(err)
		}
		c.rafts = append(c.rafts, r)
		c.fsms = append(c.fsms, fsm)
		// Let this node's goroutines start and draw their first timeouts
		// from raft's global rand before the next node exists: the order of
		// those draws is then fixed, which makes replays far more reliable.
		synctest.Wait()
	}
	return c
}

func (c *cluster) shutdown() {
	for _, r := range c.rafts {
		if err := r.Shutdown().Error(); err != nil {
			c.t.Errorf("shutdown: %v", err)
		}
	}
}

// waitFor polls cond every 10ms of virtual time for up to limit.
func (c *cluster) waitFor(limit time.Duration, what string, cond func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("after %v of virtual time: %s", limit, what)
		}
	}
}

// leaders lists the nodes that currently believe they lead.
func (c *cluster) leaders() []int {
	var ls []int
	for i, r := range c.rafts {
		if r.State() == raft.Leader {
			ls = append(ls, i)
		}
	}
	return ls
}

// waitLeader waits for exactly one leader among the nodes not in skip.
func (c *cluster) waitLeader(limit time.Duration, skip ...int) int {
	c.t.Helper()
	leader := -1
	c.waitFor(limit, "no single leader", func() bool {
		var ls []int
		for _, i := range c.leaders() {
			if !slices.Contains(skip, i) {
				ls = append(ls, i)
			}
		}
		if len(ls) == 1 {
			leader = ls[0]
			return true
		}
		return false
	})
	return leader
}

func cmd(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// applyAll submits values to node i concurrently and waits for each.
func (c *cluster) applyAll(i int, vals []uint64) error {
	fs := make([]raft.ApplyFuture, len(vals))
	for k, v := range vals {
		fs[k] = c.rafts[i].Apply(cmd(v), 5*time.Second)
	}
	for _, f := range fs {
		if err := f.Error(); err != nil {
			return err
		}
	}
	return nil
}

// waitConverged waits until every FSM holds the same want values.
func (c *cluster) waitConverged(limit time.Duration, want int) []uint64 {
	c.t.Helper()
	c.waitFor(limit, "FSMs did not converge", func() bool {
		v0 := c.fsms[0].values()
		if len(v0) != want {
			return false
		}
		for _, f := range c.fsms[1:] {
			if !slices.Equal(f.values(), v0) {
				return false
			}
		}
		return true
	})
	return c.fsms[0].values()
}

func seq(from, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(from + i)
	}
	return out
}
