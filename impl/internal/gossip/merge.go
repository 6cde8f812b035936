package gossip

import (
	"fmt"

	"github.com/hashicorp/serf/serf"
)

// idMerge refuses a join that would put one node ID under two names, as
// Consul's merge delegate does (CONSUL.md §14). The catalog takes a node ID
// for the node's identity (S62): two live agents sharing one, say from a
// copied data dir, would rename the node back and forth on every reconcile,
// invalidating its sessions each time. Members that left are exempt.
type idMerge struct {
	name, id string // this agent's
}

// NotifyMerge implements serf.MergeDelegate.
func (d idMerge) NotifyMerge(members []*serf.Member) error {
	owner := map[string]string{}
	for _, m := range members {
		id := m.Tags[TagID]
		if id == "" || m.Status == serf.StatusLeft {
			continue
		}
		if id == d.id && m.Name != d.name {
			return fmt.Errorf("Member '%s' has conflicting node ID '%s' with this agent's ID", m.Name, id)
		}
		if other, ok := owner[id]; ok && other != m.Name {
			return fmt.Errorf("Member '%s' has conflicting node ID '%s' with member '%s'", m.Name, id, other)
		}
		owner[id] = m.Name
	}
	return nil
}
