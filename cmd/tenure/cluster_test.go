package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// TestMultiProcessCluster builds the binary, runs three `tenure agent
// -server` processes on 127.0.0.1 with durable stores, kill -9s the leader,
// checks the survivors kept every acknowledged write, lock and session,
// restarts the killed process on its data directory and checks it rejoins
// with everything intact and its serfHealth passing again.
//
// It takes some seconds and starts processes, so it runs only with
// TENURE_CLUSTER_TEST=1:
//
//	TENURE_CLUSTER_TEST=1 go test ./cmd/tenure -run MultiProcess -v
func TestMultiProcessCluster(t *testing.T) {
	if os.Getenv("TENURE_CLUSTER_TEST") == "" {
		t.Skip("set TENURE_CLUSTER_TEST=1 to run the multi-process cluster test")
	}
	cl := startProcCluster(t, 3)

	lead := cl.leader(0)
	follower := (lead + 1) % 3
	fc := cl.client(follower)
	lc := cl.client(lead)
	// One TTL session on a surviving node (default checks), one on the
	// leader's node bound to no check, so a failed leader does not end it.
	ttlSession, _, err := fc.Session().Create(&api.SessionEntry{TTL: "30s", LockDelay: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodeSession, _, err := lc.Session().CreateNoChecks(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, sid := range map[string]string{"locks/ttl": ttlSession, "locks/node": nodeSession} {
		if ok, _, err := fc.KV().Acquire(&api.KVPair{Key: key, Value: []byte(sid), Session: sid}, nil); err != nil || !ok {
			t.Fatalf("acquire %s: %v %v", key, ok, err)
		}
	}
	acked := map[string]string{}
	for i := range 50 {
		k, v := fmt.Sprintf("data/%03d", i), fmt.Sprintf("value-%d", i)
		if _, err := cl.client(i%3).KV().Put(&api.KVPair{Key: k, Value: []byte(v)}, nil); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		acked[k] = v
	}

	cl.kill(lead)
	newLead := cl.leader(follower)
	if newLead == lead {
		t.Fatalf("dead node %d still reported as leader", lead)
	}
	if _, _, err := fc.Session().Renew(ttlSession, nil); err != nil {
		t.Fatalf("renew after failover: %v", err)
	}
	cl.checkIntact(follower, acked, ttlSession, nodeSession, false)
	// Gossip declares the killed node failed and the new leader sets its
	// serfHealth critical.
	dead := cl.nodes[lead].name
	cl.eventually(dead+" marked critical", func() error {
		checks, _, err := fc.Health().Node(dead, nil)
		if err != nil {
			return err
		}
		for _, ch := range checks {
			if ch.CheckID == "serfHealth" && ch.Status == api.HealthCritical {
				return nil
			}
		}
		return fmt.Errorf("checks %+v", checks)
	})

	cl.start(lead)
	cl.waitHealthy(lead, 3)
	cl.checkIntact(lead, acked, ttlSession, nodeSession, true)

	// A graceful leave (consul leave): the agent exits, the leader removes
	// it from raft and deregisters its node (S53, S54).
	now := cl.leader(follower)
	leaver := (now + 1) % 3
	name := cl.nodes[leaver].name
	if err := cl.client(leaver).Agent().Leave(); err != nil {
		t.Fatalf("leave %s: %v", name, err)
	}
	if err := cl.nodes[leaver].wait(); err != nil {
		t.Errorf("%s exited uncleanly after leaving: %v", name, err)
	}
	cl.nodes[leaver].cmd = nil
	lc = cl.client(now)
	cl.eventually(name+" out of raft and the catalog", func() error {
		conf, err := lc.Operator().RaftGetConfiguration(nil)
		if err != nil {
			return err
		}
		for _, s := range conf.Servers {
			if s.Node == name {
				return fmt.Errorf("still a raft server: %+v", conf.Servers)
			}
		}
		node, _, err := lc.Catalog().Node(name, nil)
		if err != nil {
			return err
		}
		if node != nil {
			return fmt.Errorf("node still registered: %+v", node.Node)
		}
		return nil
	})
	for i := range cl.nodes {
		if cl.nodes[i].cmd != nil {
			cl.stop(i)
		}
	}
}

type procCluster struct {
	t     *testing.T
	bin   string
	nodes []*procNode
}

type procNode struct {
	name, raft, http, serf, dir string
	cmd                         *exec.Cmd
	log                         *os.File
	// exited, when set, already waits on cmd (see waitRunning).
	exited chan error
}

// wait reaps node i's process, through exited if a waiter already runs.
func (nd *procNode) wait() error {
	if nd.exited != nil {
		err := <-nd.exited
		nd.exited = nil
		return err
	}
	return nd.cmd.Wait()
}

// startProcCluster builds the binary and runs an n-process cluster on it,
// every node healthy.
func startProcCluster(t *testing.T, n int) *procCluster {
	t.Helper()
	cl := newProcCluster(t, buildTenure(t, t.TempDir()), n)
	for i := range cl.nodes {
		cl.start(i)
	}
	for i := range cl.nodes {
		cl.waitHealthy(i, n)
	}
	return cl
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// port is the port of a host:port.
func port(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		panic(err)
	}
	return p
}

func newProcCluster(t *testing.T, bin string, n int) *procCluster {
	c := &procCluster{t: t, bin: bin}
	for i := range n {
		nd := &procNode{name: fmt.Sprintf("n%d", i+1), raft: freePort(t), http: freePort(t), serf: freePort(t),
			dir: filepath.Join(t.TempDir(), "data")}
		c.nodes = append(c.nodes, nd)
	}
	t.Cleanup(func() {
		for i, nd := range c.nodes {
			if nd.cmd != nil {
				c.kill(i)
			}
			if t.Failed() {
				if b, err := os.ReadFile(nd.log.Name()); err == nil {
					t.Logf("%s log:\n%s", nd.name, b)
				}
			}
		}
	})
	return c
}

func (c *procCluster) start(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	if nd.log == nil {
		f, err := os.Create(filepath.Join(c.t.TempDir(), nd.name+".log"))
		if err != nil {
			c.t.Fatal(err)
		}
		nd.log = f
		c.t.Cleanup(func() { f.Close() })
	}
	// Consul's flags: the servers find each other through gossip and form
	// the cluster once all of them are in (-bootstrap-expect).
	args := []string{"agent", "-server", "-bootstrap-expect", strconv.Itoa(len(c.nodes)), "-node", nd.name,
		"-data-dir", nd.dir, "-bind", "127.0.0.1", "-client", "127.0.0.1", "-http-port", port(nd.http),
		"-server-port", port(nd.raft), "-serf-lan-port", port(nd.serf), "-retry-interval", "1s", "-log-level", "debug"}
	for _, o := range c.nodes {
		if o != nd {
			args = append(args, "-retry-join", o.serf)
		}
	}
	nd.cmd = exec.Command(c.bin, args...)
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", nd.name, err)
	}
}

// kill sends SIGKILL: no shutdown code runs, as in a crash.
func (c *procCluster) kill(i int) {
	nd := c.nodes[i]
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	_ = nd.wait()
	nd.cmd = nil
}

// stop sends SIGTERM and expects a clean exit.
func (c *procCluster) stop(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	if err := nd.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	if err := nd.wait(); err != nil {
		c.t.Errorf("%s exited uncleanly after SIGTERM: %v", nd.name, err)
	}
	nd.cmd = nil
}

func (c *procCluster) client(i int) *api.Client {
	cl, err := api.NewClient(&api.Config{Address: c.nodes[i].http, Transport: &http.Transport{}})
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

func (c *procCluster) eventually(what string, cond func() error) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitHealthy waits until node i answers and sees n nodes, itself passing.
func (c *procCluster) waitHealthy(i, n int) {
	c.t.Helper()
	nd := c.nodes[i]
	c.eventually(nd.name+" healthy", func() error {
		nodes, _, err := c.client(i).Catalog().Nodes(&api.QueryOptions{AllowStale: true})
		if err != nil {
			return err
		}
		if len(nodes) != n {
			return fmt.Errorf("%d nodes", len(nodes))
		}
		checks, _, err := c.client(i).Health().Node(nd.name, &api.QueryOptions{AllowStale: true})
		if err != nil {
			return err
		}
		for _, ch := range checks {
			if ch.CheckID == "serfHealth" && ch.Status == api.HealthPassing {
				return nil
			}
		}
		return fmt.Errorf("serfHealth not passing: %+v", checks)
	})
}

// leader asks node via for the leader and returns its index.
func (c *procCluster) leader(via int) int {
	c.t.Helper()
	idx := -1
	c.eventually("a leader", func() error {
		addr, err := c.client(via).Status().Leader()
		if err != nil {
			return err
		}
		for i, nd := range c.nodes {
			if nd.raft == addr && nd.cmd != nil {
				idx = i
				return nil
			}
		}
		return fmt.Errorf("leader %q is not a running node", addr)
	})
	return idx
}

// checkIntact reads through node i (stale reads if stale, so a restarted
// follower answers from its own state) and checks every acked write, both
// sessions and both locks.
func (c *procCluster) checkIntact(i int, acked map[string]string, ttlSession, nodeSession string, stale bool) {
	c.t.Helper()
	q := &api.QueryOptions{AllowStale: stale}
	cl := c.client(i)
	c.eventually(c.nodes[i].name+" holding every acknowledged write", func() error {
		pairs, _, err := cl.KV().List("data/", q)
		if err != nil {
			return err
		}
		if len(pairs) != len(acked) {
			return fmt.Errorf("%d of %d keys", len(pairs), len(acked))
		}
		for _, p := range pairs {
			if acked[p.Key] != string(p.Value) {
				return fmt.Errorf("%s = %q, want %q", p.Key, p.Value, acked[p.Key])
			}
		}
		for key, sid := range map[string]string{"locks/ttl": ttlSession, "locks/node": nodeSession} {
			p, _, err := cl.KV().Get(key, q)
			if err != nil {
				return err
			}
			if p == nil || p.Session != sid {
				return fmt.Errorf("%s = %+v, want held by %s", key, p, sid)
			}
			if se, _, err := cl.Session().Info(sid, q); err != nil || se == nil {
				return fmt.Errorf("session %s: %+v %v", sid, se, err)
			}
		}
		return nil
	})
}
