package main

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/internal/proccluster"
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
	cl := proccluster.Up(t, proccluster.BuildTenure(t), proccluster.Options{LogLevel: "debug"})

	lead := cl.Leader(0)
	follower := (lead + 1) % 3
	fc := apiClient(t, cl, follower)
	lc := apiClient(t, cl, lead)
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
		if _, err := apiClient(t, cl, i%3).KV().Put(&api.KVPair{Key: k, Value: []byte(v)}, nil); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		acked[k] = v
	}

	cl.Kill(lead)
	newLead := cl.Leader(follower)
	if newLead == lead {
		t.Fatalf("dead node %d still reported as leader", lead)
	}
	if _, _, err := fc.Session().Renew(ttlSession, nil); err != nil {
		t.Fatalf("renew after failover: %v", err)
	}
	checkIntact(t, cl, follower, acked, ttlSession, nodeSession, false)
	// Gossip declares the killed node failed and the new leader sets its
	// serfHealth critical.
	dead := cl.Nodes[lead].Name()
	cl.Eventually(dead+" marked critical", func() error {
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

	cl.Start(lead)
	cl.WaitReady(lead)
	checkIntact(t, cl, lead, acked, ttlSession, nodeSession, true)

	// A graceful leave (consul leave): the agent exits, the leader removes
	// it from raft and deregisters its node (S53, S54).
	now := cl.Leader(follower)
	leaver := (now + 1) % 3
	name := cl.Nodes[leaver].Name()
	if err := apiClient(t, cl, leaver).Agent().Leave(); err != nil {
		t.Fatalf("leave %s: %v", name, err)
	}
	if err := cl.Nodes[leaver].Proc.Wait(); err != nil {
		t.Errorf("%s exited uncleanly after leaving: %v", name, err)
	}
	lc = apiClient(t, cl, now)
	cl.Eventually(name+" out of raft and the catalog", func() error {
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
	for i, nd := range cl.Nodes {
		if nd.Running() {
			cl.Stop(i)
		}
	}
}

func TestMain(m *testing.M) { os.Exit(proccluster.Main(m)) }

// apiClient is a consul/api client of node i with a transport of its own.
func apiClient(t *testing.T, cl *proccluster.Cluster, i int) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: cl.Nodes[i].HTTPAddr(), Transport: &http.Transport{}})
	if err != nil {
		t.Fatalf("client of %s: %v", cl.Nodes[i].Name(), err)
	}
	return c
}

// checkIntact reads through node i (stale reads if stale, so a restarted
// follower answers from its own state) and checks every acked write, both
// sessions and both locks.
func checkIntact(t *testing.T, c *proccluster.Cluster, i int, acked map[string]string, ttlSession, nodeSession string, stale bool) {
	t.Helper()
	q := &api.QueryOptions{AllowStale: stale}
	cl := apiClient(t, c, i)
	c.Eventually(c.Nodes[i].Name()+" holding every acknowledged write", func() error {
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
