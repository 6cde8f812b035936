package reconcile

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/tenurekv/tenure/model"
)

// Status is a member's gossip status, as serf reports it.
type Status int

// Serf's member statuses, plus Reaped for a member serf has forgotten.
const (
	Alive Status = iota + 1
	Leaving
	Left
	Failed
	Reaped
)

func (s Status) String() string {
	switch s {
	case Alive:
		return "alive"
	case Leaving:
		return "leaving"
	case Left:
		return "left"
	case Failed:
		return "failed"
	case Reaped:
		return "reaped"
	}
	return "unknown"
}

// Member is one gossip member as the leader sees it.
type Member struct {
	Name string
	// ID is the node UUID the member advertises (its "id" tag; empty from
	// an agent that has none), Version the version of its build tag.
	ID, Version string
	// ProtocolMin, ProtocolMax and ProtocolCur are the member's serf
	// protocol range, which a server's "consul" service shows.
	ProtocolMin, ProtocolMax, ProtocolCur uint8
	// Address is what the catalog records for the node: the address the
	// agent advertises for its HTTP API.
	Address string
	Status  Status
	// Server is set for a server; RaftAddr is where its raft listens,
	// Expect its -bootstrap-expect (0 if none) and Bootstrapped whether it
	// already belongs to a raft cluster.
	Server       bool
	RaftAddr     string
	Expect       int
	Bootstrapped bool
}

// CheckName is the name Consul gives the gossip health check.
const CheckName = "Serf Health Status"

// versionMetaKey is the node meta key Consul gives an agent's version.
const versionMetaKey = "consul-version"

// Decide returns the catalog write that brings the catalog in line with m,
// or false when the catalog already agrees. self is the leader's own node
// name: like Consul, the leader never deregisters itself (a follower's
// leader does that once it has stepped down).
func Decide(st *model.State, m Member, self string) (model.Command, bool) {
	node, known := st.Node(m.Name)
	check, hasCheck := st.Check(model.CheckKey{Node: m.Name, CheckID: model.SerfHealthCheckID})
	switch m.Status {
	case Alive:
		service, isServer := consulService(m)
		if known && node.Address == m.Address && hasCheck && check.Status == model.HealthPassing &&
			(!isServer || hasService(st, m.Name, service)) {
			return model.Command{}, false
		}
		// The member's ID is the node's (S62); a node the catalog has keeps
		// its tagged addresses and meta, as Consul keeps them by copying,
		// and a new one starts with the agent's version, as in Consul.
		reg := register(m.Name, m.Address, model.HealthPassing)
		r := reg.Register
		r.ID = m.ID
		switch {
		case known && node.Address == m.Address && (m.ID == "" || strings.EqualFold(m.ID, node.ID)):
			// Nothing of the node itself changes, so it is not written at
			// all. Copying its tagged addresses and meta, as Consul does,
			// would race with the agent's own record (S63): a record the
			// agent writes after this decision and before its commit would
			// be put back to the copy.
			r.SkipNodeUpdate = true
		case known:
			// The address or ID changed, so the node is written. Its
			// record is kept as it is when the write applies, not copied
			// now, for the same reason (KeepRecord).
			r.KeepRecord = true
		default:
			// A new node starts with the agent's version. The agent may
			// write its own record between this decision and its commit,
			// so the write keeps whatever record is there when it applies
			// (KeepRecord); only a node still absent takes this meta.
			r.KeepRecord = true
			if m.Version != "" {
				r.NodeMeta = map[string]string{versionMetaKey: m.Version}
			}
		}
		if isServer {
			r.Services = []model.ServiceSpec{service}
		}
		return reg, true
	case Failed:
		// A member that never made it into the catalog has nothing to fail.
		if !known || (hasCheck && check.Status == model.HealthCritical) {
			return model.Command{}, false
		}
		// Only the check changes; the node stays as it is.
		reg := register(m.Name, node.Address, model.HealthCritical)
		reg.Register.SkipNodeUpdate = true
		return reg, true
	case Left, Reaped:
		if !known || m.Name == self {
			return model.Command{}, false
		}
		return model.Command{Deregister: &model.Deregister{Node: m.Name}}, true
	}
	// Leaving: the leave completes as Left; nothing to write meanwhile.
	return model.Command{}, false
}

// consulServiceName is the service Consul registers on every server's
// node, through which clients find the servers (CONSUL.md §13).
const consulServiceName = "consul"

// consulService is the "consul" service m's node carries if m is a server,
// as Consul's leader registers it: the server port, and meta naming the
// server's raft and serf protocols and its version.
func consulService(m Member) (model.ServiceSpec, bool) {
	if !m.Server {
		return model.ServiceSpec{}, false
	}
	port := 0
	if _, p, err := net.SplitHostPort(m.RaftAddr); err == nil {
		port, _ = strconv.Atoi(p)
	}
	return model.ServiceSpec{ID: consulServiceName, Service: consulServiceName, Port: port, Meta: map[string]string{
		"non_voter": "false", "read_replica": "false", "raft_version": "3",
		"serf_protocol_current": strconv.Itoa(int(m.ProtocolCur)),
		"serf_protocol_min":     strconv.Itoa(int(m.ProtocolMin)),
		"serf_protocol_max":     strconv.Itoa(int(m.ProtocolMax)),
		"version":               m.Version,
	}}, true
}

// hasService reports whether node already carries want as stored.
func hasService(st *model.State, node string, want model.ServiceSpec) bool {
	sv, ok := st.Service(model.ServiceKey{Node: node, ServiceID: want.ID})
	return ok && sv.Service == want.Service && sv.Port == want.Port && sv.Address == want.Address &&
		len(sv.Tags) == 0 && maps.Equal(sv.Meta, want.Meta)
}

// Unknown lists the catalog nodes that carry a serfHealth check but that
// gossip does not know at all (member reports whether it does), sorted:
// serf has reaped them, or they were registered by hand with a gossip check
// they cannot keep. Each is to be decided as Reaped.
func Unknown(st *model.State, member func(name string) bool) []Member {
	var out []Member
	for _, c := range st.CheckList("", "") {
		if c.CheckID != model.SerfHealthCheckID || member(c.Node) {
			continue
		}
		out = append(out, Member{Name: c.Node, Status: Reaped})
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// serfHealth's output, in Consul's words, so health reads show the same.
const (
	OutputAlive  = "Agent alive and reachable"
	outputFailed = "Agent not live or unreachable"
)

func register(node, address string, status model.Health) model.Command {
	output := OutputAlive
	if status != model.HealthPassing {
		output = outputFailed
	}
	return model.Command{Register: &model.Register{Node: node, Address: address, Checks: []model.CheckSpec{
		{CheckID: model.SerfHealthCheckID, Name: CheckName, Status: status, Output: output},
	}}}
}
