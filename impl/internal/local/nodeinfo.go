package local

import (
	"maps"
	"strings"
)

// NodeInfo is what an agent keeps of its own node in the catalog, as
// Consul's agent does (syncNodeInfo): its ID, tagged addresses and meta.
// The node's address is the catalog's (the gossip reconcile writes it),
// so it is not compared, only sent along.
type NodeInfo struct {
	ID              string
	TaggedAddresses map[string]string
	Meta            map[string]string
}

func (n NodeInfo) clone() NodeInfo {
	n.TaggedAddresses = maps.Clone(n.TaggedAddresses)
	n.Meta = maps.Clone(n.Meta)
	return n
}

// same is the comparison a full sync makes against the catalog's record.
// IDs compare ignoring case: the catalog keeps them as registered, and
// Consul's agent lowercases its own.
func (n NodeInfo) same(o NodeInfo) bool {
	return strings.EqualFold(n.ID, o.ID) && maps.Equal(n.TaggedAddresses, o.TaggedAddresses) &&
		maps.Equal(n.Meta, o.Meta)
}

// NodeCatalog is a Catalog that can also read and write the node's own
// record. A Syncer given NodeInfo keeps that record in line through it; a
// Catalog without it leaves the node to whoever else writes it.
type NodeCatalog interface {
	Catalog
	// NodeAndServices reads node's record with its services, in one read
	// as Consul's agent does; found is false when the catalog has no such
	// node.
	NodeAndServices(node string) (info NodeInfo, found bool, services []Service, err error)
	// RegisterNode writes node's record, creating the node if missing and
	// leaving its services and checks alone. The record is replaced whole.
	RegisterNode(node string, info NodeInfo) error
}
