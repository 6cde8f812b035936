package model

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strings"
)

// Hash is a stable 64-bit digest of the state: equal states hash equally on
// every run and platform, because maps are walked in sorted order.
func (s *State) Hash() uint64 {
	h := fnv.New64a()
	var buf [8]byte
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	str := func(v string) {
		num(uint64(len(v)))
		h.Write([]byte(v))
	}
	strs := func(vs []string) {
		num(uint64(len(vs)))
		for _, v := range vs {
			str(v)
		}
	}
	strMap := func(m map[string]string) {
		num(uint64(len(m)))
		for _, k := range sortedKeys(m) {
			str(k)
			str(m[k])
		}
	}
	flag := func(b bool) {
		if b {
			num(1)
		} else {
			num(0)
		}
	}
	t := s.tables
	num(t.Nodes)
	num(t.Services)
	num(t.Checks)
	num(t.Sessions)
	num(t.Queries)
	num(t.KV)
	num(s.lockFloor)
	num(s.reapedThrough)
	num(uint64(len(s.nodes)))
	for _, k := range sortedKeys(s.nodes) {
		n := s.nodes[k]
		str(n.Name)
		str(n.ID)
		str(n.Address)
		strMap(n.TaggedAddresses)
		strMap(n.Meta)
		num(n.CreateIndex)
		num(n.ModifyIndex)
	}
	services := s.ServiceList("")
	num(uint64(len(services)))
	for _, sv := range services {
		str(sv.Node)
		str(sv.ServiceID)
		str(sv.Service)
		strs(sv.Tags)
		str(sv.Address)
		num(uint64(int64(sv.Port)))
		strMap(sv.Meta)
		// Written only when present, so that states without them hash as
		// they did before services had them (the simulator's digests).
		for _, k := range slices.Sorted(maps.Keys(sv.TaggedAddresses)) {
			str(k)
			str(sv.TaggedAddresses[k].Address)
			num(uint64(int64(sv.TaggedAddresses[k].Port)))
		}
		num(sv.CreateIndex)
		num(sv.ModifyIndex)
		// Details only when set, so that a state without any hashes as
		// it did before they existed (the simulator's recorded digests).
		// The marker is no length a string or count can have.
		if d := sv.ServiceDetails; !d.IsZero() {
			num(^uint64(0))
			str(d.Kind)
			num(uint64(len(d.TaggedAddresses)))
			for _, k := range sortedKeys(d.TaggedAddresses) {
				str(k)
				str(d.TaggedAddresses[k].Address)
				num(uint64(int64(d.TaggedAddresses[k].Port)))
			}
			num(uint64(len(d.Ports)))
			for _, p := range d.Ports {
				str(p.Name)
				num(uint64(int64(p.Port)))
				flag(p.Default)
			}
			str(d.SocketPath)
			flag(d.Weights != nil)
			if d.Weights != nil {
				num(uint64(int64(d.Weights.Passing)))
				num(uint64(int64(d.Weights.Warning)))
			}
			flag(d.EnableTagOverride)
			flag(d.Locality != nil)
			if d.Locality != nil {
				str(d.Locality.Region)
				str(d.Locality.Zone)
			}
			str(d.Proxy)
		}
	}
	checkKeys := slices.SortedFunc(maps.Keys(s.checks), func(a, b CheckKey) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return strings.Compare(a.CheckID, b.CheckID)
	})
	num(uint64(len(checkKeys)))
	for _, k := range checkKeys {
		c := s.checks[k]
		str(c.Node)
		str(c.CheckID)
		str(c.Name)
		str(string(c.Status))
		str(c.Notes)
		str(c.Output)
		str(c.ServiceID)
		str(c.ServiceName)
		str(c.Type)
		if c.Definition != "" { // as for tagged addresses
			str(c.Definition)
		}
		num(c.CreateIndex)
		num(c.ModifyIndex)
	}
	num(uint64(len(s.sessions)))
	for _, k := range sortedKeys(s.sessions) {
		se := s.sessions[k]
		str(se.ID)
		str(se.Name)
		str(se.Node)
		strs(se.Checks)
		strs(se.NodeChecks)
		num(uint64(len(se.ServiceChecks)))
		for _, sc := range se.ServiceChecks {
			str(sc.ID)
			str(sc.Namespace)
		}
		num(uint64(se.LockDelay))
		str(string(se.Behavior))
		str(se.TTL)
		num(se.CreateIndex)
		num(se.ModifyIndex)
	}
	num(uint64(len(s.queries)))
	for _, q := range s.QueryList() {
		sv := q.Service
		str(q.ID)
		str(q.Name)
		str(q.Session)
		str(q.Token)
		str(q.Template.Type)
		str(q.Template.Regexp)
		if q.Template.RemoveEmptyTags {
			num(1)
		} else {
			num(0)
		}
		str(sv.Service)
		num(uint64(int64(sv.Failover.NearestN)))
		strs(sv.Failover.Datacenters)
		num(uint64(len(sv.Failover.Targets)))
		for _, tg := range sv.Failover.Targets {
			str(tg.Peer)
			str(tg.Datacenter)
		}
		if sv.OnlyPassing {
			num(1)
		} else {
			num(0)
		}
		strs(sv.IgnoreCheckIDs)
		str(sv.Near)
		strs(sv.Tags)
		strMap(sv.NodeMeta)
		strMap(sv.ServiceMeta)
		str(q.DNS.TTL)
		num(q.CreateIndex)
		num(q.ModifyIndex)
	}
	num(uint64(len(s.kv)))
	for _, k := range sortedKeys(s.kv) {
		e := s.kv[k]
		str(e.Key)
		str(string(e.Value))
		num(e.Flags)
		num(e.LockIndex)
		str(e.Session)
		num(e.CreateIndex)
		num(e.ModifyIndex)
	}
	for _, m := range []map[string]uint64{s.tombstones, s.lockIssued, s.delayedAt} {
		num(uint64(len(m)))
		for _, k := range sortedKeys(m) {
			str(k)
			num(m[k])
		}
	}
	s.hashACL(num, str, strs)
	return h.Sum64()
}

// hashACL feeds the ACL tables to Hash (S87): the table indexes, the
// bootstrap index and every record, walked in sorted order.
func (s *State) hashACL(num func(uint64), str func(string), strs func([]string)) {
	flag := func(b bool) {
		if b {
			num(1)
		} else {
			num(0)
		}
	}
	identities := func(svc []ACLServiceIdentity, nodes []ACLNodeIdentity) {
		num(uint64(len(svc)))
		for _, id := range svc {
			str(id.ServiceName)
			strs(id.Datacenters)
		}
		num(uint64(len(nodes)))
		for _, id := range nodes {
			str(id.NodeName)
			str(id.Datacenter)
		}
	}
	t := s.tables
	num(t.ACLTokens)
	num(t.ACLPolicies)
	num(t.ACLRoles)
	num(s.aclBootstrapIndex)
	num(uint64(len(s.aclTokens)))
	for _, k := range sortedKeys(s.aclTokens) {
		tok := s.aclTokens[k]
		str(tok.AccessorID)
		str(tok.SecretID)
		str(tok.Description)
		strs(tok.Policies)
		strs(tok.Roles)
		identities(tok.ServiceIdentities, tok.NodeIdentities)
		flag(tok.Local)
		num(uint64(tok.CreateTime))
		num(tok.CreateIndex)
		num(tok.ModifyIndex)
	}
	num(uint64(len(s.aclPolicies)))
	for _, k := range sortedKeys(s.aclPolicies) {
		p := s.aclPolicies[k]
		str(p.ID)
		str(p.Name)
		str(p.Description)
		str(p.Rules)
		strs(p.Datacenters)
		num(p.CreateIndex)
		num(p.ModifyIndex)
	}
	num(uint64(len(s.aclRoles)))
	for _, k := range sortedKeys(s.aclRoles) {
		r := s.aclRoles[k]
		str(r.ID)
		str(r.Name)
		str(r.Description)
		strs(r.Policies)
		identities(r.ServiceIdentities, r.NodeIdentities)
		num(r.CreateIndex)
		num(r.ModifyIndex)
	}
	// Coordinates (S89) come last and only once there are any, so a state
	// without them hashes as it did before they existed.
	if t.Coordinates != 0 || len(s.coords) > 0 {
		num(t.Coordinates)
		num(uint64(len(s.coords)))
		for _, c := range s.CoordinateList() {
			str(c.Node)
			str(c.Segment)
			num(uint64(len(c.Coord.Vec)))
			for _, v := range c.Coord.Vec {
				num(math.Float64bits(v))
			}
			num(math.Float64bits(c.Coord.Error))
			num(math.Float64bits(c.Coord.Adjustment))
			num(math.Float64bits(c.Coord.Height))
		}
	}
}
