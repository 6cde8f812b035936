package agent_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestMembershipAndOperatorEndpoints: a dev agent with a gossip pool
// answers Consul's membership, operator and status calls, read through
// consul/api as `consul members`, `consul operator raft list-peers` and
// `consul info` read them, and refuses bad operator input with Consul's
// messages.
func TestMembershipAndOperatorEndpoints(t *testing.T) {
	a := agenttest.StartDevAgent(t, nil)
	c := client(t, a.HTTPAddr())

	members, err := c.Agent().Members(false)
	if err != nil || len(members) != 1 || members[0].Name != "dev" || members[0].Status != 1 || members[0].Port == 0 ||
		members[0].Tags["role"] != "consul" {
		t.Fatalf("members: %+v %v", members, err)
	}
	self, err := c.Agent().Self()
	if err != nil {
		t.Fatal(err)
	}
	if self["Config"]["NodeName"] != "dev" || self["Member"]["Name"] != "dev" {
		t.Fatalf("agent self: %+v", self)
	}
	stats, ok := self["Stats"]
	if !ok {
		t.Fatal("agent self has no Stats")
	}
	for _, section := range []string{"agent", "build", "consul", "runtime", "raft", "serf_lan"} {
		if _, ok := stats[section]; !ok {
			t.Errorf("agent self Stats has no %q section: %v", section, stats)
		}
	}

	conf, err := c.Operator().RaftGetConfiguration(nil)
	if err != nil || len(conf.Servers) != 1 || !conf.Servers[0].Leader || !conf.Servers[0].Voter || conf.Servers[0].Node != "dev" {
		t.Fatalf("raft configuration: %+v %v", conf, err)
	}
	leader, err := c.Status().Leader()
	if err != nil || leader != conf.Servers[0].Address {
		t.Fatalf("status leader %q (%v), want the raft configuration's leader %q", leader, err, conf.Servers[0].Address)
	}
	dcs, err := c.Catalog().Datacenters()
	if err != nil || len(dcs) != 1 || dcs[0] != "dc1" {
		t.Fatalf("datacenters: %v %v", dcs, err)
	}
	ap, err := c.Operator().AutopilotGetConfiguration(nil)
	if err != nil || ap.CleanupDeadServers {
		t.Fatalf("autopilot configuration: %+v %v", ap, err)
	}

	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{http.MethodDelete, "/v1/operator/raft/peer", 400, "Must specify either ?id"},
		{http.MethodDelete, "/v1/operator/raft/peer?id=a&address=b", 400, "Must specify only one of ?id or ?address"},
		{http.MethodDelete, "/v1/operator/raft/peer?id=nobody", 500, `id "nobody" was not found in the Raft configuration`},
		{http.MethodDelete, "/v1/operator/raft/peer?address=10.9.9.9:8300", 500, `address "10.9.9.9:8300" was not found`},
		{http.MethodPut, "/v1/agent/force-leave/nobody", 500, "No node found with name 'nobody'"},
		{http.MethodPut, "/v1/agent/join/127.0.0.1:1", 500, "join"},
		{http.MethodPost, "/v1/agent/members", 405, ""},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+a.HTTPAddr()+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.want)
		}
	}
	if conf, err := c.Operator().RaftGetConfiguration(nil); err != nil || len(conf.Servers) != 1 {
		t.Fatalf("bad operator calls changed the configuration: %+v %v", conf, err)
	}
}
