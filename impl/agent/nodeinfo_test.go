package agent_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestAgentKeepsItsNodeRecord (S63): a server agent's and a client agent's
// nodes carry their tagged addresses and their meta (the operator's beside
// the segment and version), /v1/agent/self shows the meta, and a register
// that rewrites the node's record is undone by the agent's next full sync.
func TestAgentKeepsItsNodeRecord(t *testing.T) {
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) {
		c.NodeMeta = map[string]string{"rack": "r1"}
		fastSync(&c.Local)
	})
	cli := agenttest.StartClientWith(t, "client-1", srv, func(c *agent.ClientConfig) {
		c.NodeMeta = map[string]string{"zone": "a", "empty": ""}
		fastSync(&c.Local)
	})
	direct := client(t, srv.HTTPAddr())
	for _, tc := range []struct {
		node string
		api  *api.Client
		meta map[string]string
	}{
		{"dev", client(t, srv.HTTPAddr()), map[string]string{"rack": "r1"}},
		{"client-1", client(t, cli.HTTPAddr()), map[string]string{"zone": "a", "empty": ""}},
	} {
		want := maps.Clone(tc.meta)
		want[agent.MetaSegment] = ""
		self, err := tc.api.Agent().Self()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for k, v := range self["Meta"] {
			got[k], _ = v.(string)
		}
		want["consul-version"] = got["consul-version"]
		if want["consul-version"] == "" || !maps.Equal(got, want) {
			t.Fatalf("%s: agent self Meta %v, want %v with a version", tc.node, got, want)
		}
		addr := ""
		eventually(t, tc.node+"'s node record reaches the catalog", func() error {
			n, _, err := direct.Catalog().Node(tc.node, nil)
			if err != nil || n == nil || n.Node == nil {
				return errorf("node %+v %v", n, err)
			}
			addr = n.Node.Address
			wantTagged := map[string]string{"lan": addr, "lan_ipv4": addr, "wan": addr, "wan_ipv4": addr}
			if !maps.Equal(n.Node.Meta, want) || !maps.Equal(n.Node.TaggedAddresses, wantTagged) || n.Node.ID == "" {
				return errorf("node ID %q, meta %v (want %v), tagged %v (want %v)", n.Node.ID, n.Node.Meta, want,
					n.Node.TaggedAddresses, wantTagged)
			}
			return nil
		})
		n, _, _ := direct.Catalog().Node(tc.node, nil)
		if _, err := direct.Catalog().Register(&api.CatalogRegistration{ID: n.Node.ID, Node: tc.node, Address: addr,
			NodeMeta: map[string]string{"operator": "x"}}, nil); err != nil {
			t.Fatal(err)
		}
		eventually(t, tc.node+"'s rewritten record is restored", func() error {
			n, _, err := direct.Catalog().Node(tc.node, nil)
			if err != nil || n == nil || n.Node == nil || !maps.Equal(n.Node.Meta, want) || len(n.Node.TaggedAddresses) != 4 {
				return errorf("node %+v %v", n, err)
			}
			return nil
		})
	}
}

// TestAgentRecordAtConsulsBounds: the most meta an agent accepts at start
// (64 pairs of the longest keys and values Consul allows) plus the agent's
// own two keys is a record its servers take.
func TestAgentRecordAtConsulsBounds(t *testing.T) {
	meta := map[string]string{}
	for i := range 64 {
		meta[fmt.Sprintf("%03d%s", i, strings.Repeat("k", 125))] = strings.Repeat("v", 512)
	}
	srv := agenttest.StartDevAgent(t, func(c *agent.Config) {
		c.NodeMeta = meta
		fastSync(&c.Local)
	})
	direct := client(t, srv.HTTPAddr())
	eventually(t, "the record with 66 meta pairs reaches the catalog", func() error {
		n, _, err := direct.Catalog().Node("dev", nil)
		if err != nil || n == nil || n.Node == nil || len(n.Node.Meta) != 66 {
			return errorf("node %+v %v", n, err)
		}
		return nil
	})
}
