package model

import (
	"maps"
	"slices"
	"strings"
)

// A register's node write (S62), as Consul's catalog does it: the node's
// ID, address, tagged addresses and meta replace the stored ones, and a node
// ID is the node's identity across names.

// putNode writes r's node, or refuses it before anything is written:
//   - With SkipNodeUpdate, an existing node is left as it is.
//   - With KeepRecord, an existing node keeps its tagged addresses, meta
//     and, if r names none, ID.
//   - A register that changes nothing about an existing node writes nothing.
//   - An ID that another node carries renames that node: the old one is
//     deleted with its services, checks and sessions, and the new record
//     keeps its CreateIndex.
//   - A name that a live node with another ID holds is refused, so one agent
//     cannot take over another's node.
func (a *applier) putNode(r Register, asked string) *Error {
	s := a.s
	byName, named := s.nodes[r.Node]
	if named && r.SkipNodeUpdate {
		return nil
	}
	n := Node{Name: r.Node, ID: r.ID, Address: r.Address,
		TaggedAddresses: maps.Clone(r.TaggedAddresses), Meta: maps.Clone(r.NodeMeta)}
	if named && r.KeepRecord {
		n.TaggedAddresses, n.Meta = maps.Clone(byName.TaggedAddresses), maps.Clone(byName.Meta)
		if n.ID == "" {
			n.ID = byName.ID
		}
	}
	if named && n.sameInfo(byName) {
		return nil
	}
	prev, hasPrev := byName, named
	renameFrom := ""
	if r.ID != "" {
		if byID, ok := s.nodeByID(r.ID); ok {
			prev, hasPrev = byID, true
			if byID.Name != r.Node {
				if err := s.nameReserved(n, asked, false); err != "" {
					return errorf(ErrInvalid, "Error while renaming Node ID: %q (%s): %s", r.ID, r.Address, err)
				}
				renameFrom = byID.Name
			}
		} else if err := s.nameReserved(n, asked, true); err != "" {
			return errorf(ErrInvalid, "Error while renaming Node ID: %q: %s", r.ID, err)
		}
	}
	if renameFrom != "" {
		a.deleteNode(renameFrom)
	}
	n.CreateIndex, n.ModifyIndex = a.idx, a.idx
	if hasPrev {
		n.CreateIndex = prev.CreateIndex
	}
	if named {
		s.indexNodeID(byName, true)
	} else {
		s.foldNode(r.Node)
	}
	s.nodes[r.Node] = n
	s.indexNodeID(n, false)
	s.tables.Nodes = a.idx
	return nil
}

// nodeKey is the name the catalog keeps name's node under. Node names
// compare ignoring case, as in Consul's catalog (whose index lower-cases
// them), and a node keeps the case it was first registered with: an exact
// match wins, then a match ignoring case (the least key, should a snapshot
// from before this rule hold several), and a name no node has is its own
// key.
func (s *State) nodeKey(name string) string {
	if _, ok := s.nodes[name]; ok || name == "" {
		return name
	}
	if keys := s.nodeFold[strings.ToLower(name)]; len(keys) > 0 {
		return keys[0]
	}
	return name
}

// foldNode adds a new node's key to nodeFold.
func (s *State) foldNode(key string) {
	lower := strings.ToLower(key)
	keys := append(slices.Clone(s.nodeFold[lower]), key)
	slices.Sort(keys)
	s.nodeFold[lower] = keys
}

// unfoldNode removes a deleted node's key from nodeFold.
func (s *State) unfoldNode(key string) {
	lower := strings.ToLower(key)
	keys := slices.DeleteFunc(slices.Clone(s.nodeFold[lower]), func(k string) bool { return k == key })
	if len(keys) == 0 {
		delete(s.nodeFold, lower)
		return
	}
	s.nodeFold[lower] = keys
}

// nodeByID finds the node carrying id. IDs are UUIDs, so case does not
// tell two apart.
func (s *State) nodeByID(id string) (Node, bool) {
	key, ok := s.nodeIDs[strings.ToLower(id)]
	if !ok {
		return Node{}, false
	}
	return s.nodes[key], true
}

// indexNodeID records, or with drop forgets, which node carries n's ID.
func (s *State) indexNodeID(n Node, drop bool) {
	if n.ID == "" {
		return
	}
	id := strings.ToLower(n.ID)
	switch {
	case !drop:
		s.nodeIDs[id] = n.Name
	case s.nodeIDs[id] == n.Name:
		delete(s.nodeIDs, id)
	}
}

// nameReserved returns why n may not take its name (asked, as the register
// spelled it), or "": another node of that name, ignoring case, with
// another ID and a serfHealth check that is not critical still belongs to a
// live agent. A node without serfHealth was registered by hand and can be
// taken; with allowNoID, so can one without an ID, which is how a node
// gains its first ID.
func (s *State) nameReserved(n Node, asked string, allowNoID bool) string {
	for _, name := range s.nodeFold[strings.ToLower(n.Name)] {
		other := s.nodes[name]
		if other.ID == n.ID {
			continue
		}
		if other.ID == "" && allowNoID {
			continue
		}
		serf, ok := s.checks[CheckKey{Node: other.Name, CheckID: SerfHealthCheckID}]
		if ok && serf.Status != HealthCritical {
			return "Node name " + asked + " is reserved by node " + other.ID + " with name " + other.Name + " (" + other.Address + ")"
		}
	}
	return ""
}
