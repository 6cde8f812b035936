package agent

import (
	"maps"
	"net"
	"strings"

	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/local"
)

// Node meta keys Consul's agent gives its own node (S63). An operator's
// meta may not start with model.MetaReservedPrefix.
const (
	MetaSegment = "consul-network-segment"
	metaVersion = "consul-version"
)

// nodeInfo is the record an agent keeps of its own node in the catalog
// (S63), as Consul's agent builds it: its ID; its address tagged lan and
// wan, and again under the address family (tenure has one address for
// both); and the operator's meta beside the network segment (always the
// default, "") and the agent's version.
func nodeInfo(id, addr, version string, meta map[string]string) *local.NodeInfo {
	tagged := map[string]string{"lan": addr, "wan": addr}
	if ip := net.ParseIP(addr); ip != nil {
		family := "_ipv6"
		if ip.To4() != nil {
			family = "_ipv4"
		}
		tagged["lan"+family], tagged["wan"+family] = addr, addr
	}
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]string{}
	}
	m[MetaSegment] = ""
	if version != "" {
		m[metaVersion] = version
	}
	return &local.NodeInfo{ID: id, TaggedAddresses: tagged, Meta: m}
}

// agentVersion is the version an agent advertises: the one in its gossip
// build tag ("<version>:<revision>"), which the leader's reconcile also
// reads, else the API's.
func agentVersion(tags map[string]string, api string) string {
	if v, _, _ := strings.Cut(tags[gossip.TagBuild], ":"); v != "" {
		return v
	}
	return api
}
