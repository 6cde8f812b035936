package local

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func agentNodeInfo() NodeInfo {
	return NodeInfo{ID: "0b5d7c5e-0000-4000-8000-00000000000a",
		TaggedAddresses: map[string]string{"lan": "10.0.0.1", "lan_ipv4": "10.0.0.1", "wan": "10.0.0.1", "wan_ipv4": "10.0.0.1"},
		Meta:            map[string]string{"consul-network-segment": "", "consul-version": "0.1.0", "rack": "r1"}}
}

func newNodeSynced(cat Catalog) *Syncer {
	_, s := newNodeSyncedState(cat)
	return s
}

func newNodeSyncedState(cat Catalog) (*State, *Syncer) {
	info := agentNodeInfo()
	st := newState(node, 0, zero)
	return st, newSyncer(st, cat, SyncConfig{Stagger: zero, NodeInfo: &info})
}

// TestNodeInfoSameComparesEveryField: a record differing in any one field
// the agent keeps is out of sync; the ID's case is not a difference.
func TestNodeInfoSameComparesEveryField(t *testing.T) {
	base := agentNodeInfo()
	for name, mod := range map[string]func(*NodeInfo){
		"ID":                   func(n *NodeInfo) { n.ID = "0b5d7c5e-0000-4000-8000-00000000000b" },
		"TaggedAddresses":      func(n *NodeInfo) { n.TaggedAddresses["wan"] = "192.0.2.1" },
		"TaggedAddresses gone": func(n *NodeInfo) { n.TaggedAddresses = nil },
		"Meta value":           func(n *NodeInfo) { n.Meta["rack"] = "r2" },
		"Meta extra key":       func(n *NodeInfo) { n.Meta["x"] = "" },
		"Meta gone":            func(n *NodeInfo) { n.Meta = nil },
	} {
		other := base.clone()
		mod(&other)
		if base.same(other) {
			t.Errorf("%s changed and the record still counts as the same", name)
		}
	}
	upper := base.clone()
	upper.ID = "0B5D7C5E-0000-4000-8000-00000000000A"
	if !base.same(upper) {
		t.Error("the same ID in capitals counts as a different node")
	}
}

// TestFirstSyncWritesNodeInfo: the first sync reads the node's record with
// its services and writes the record once; later syncs with nothing
// changed write nothing.
func TestFirstSyncWritesNodeInfo(t *testing.T) {
	cat := NewMemCatalog()
	s := newNodeSynced(cat)
	if err := s.syncFull(); err != nil {
		t.Fatal(err)
	}
	if r := cat.readCount(); r != 2 {
		t.Errorf("a full sync made %d reads, want 2: the node with its services, and its checks", r)
	}
	got, found := cat.record(node)
	if !found {
		t.Fatal("the node is not in the catalog after the first sync")
	}
	if diff := cmp.Diff(agentNodeInfo(), got); diff != "" {
		t.Errorf("node record (-want +got):\n%s", diff)
	}
	if w := cat.Writes(); w != 1 {
		t.Errorf("first sync made %d writes, want 1", w)
	}
	for range 2 {
		if err := s.syncFull(); err != nil {
			t.Fatal(err)
		}
		mustSync(t, s)
	}
	if w := cat.Writes(); w != 1 {
		t.Errorf("syncs with nothing changed wrote: %d writes in all, want 1", w)
	}
}

// TestFullSyncRestoresRewrittenNodeInfo: a record someone else rewrote
// (an operator's register without meta, a rename of the ID) is put back by
// the next full sync, and only by a full sync: partial syncs do not read.
func TestFullSyncRestoresRewrittenNodeInfo(t *testing.T) {
	for name, drift := range map[string]NodeInfo{
		"meta cleared":        {ID: agentNodeInfo().ID, TaggedAddresses: agentNodeInfo().TaggedAddresses},
		"tagged addresses":    {ID: agentNodeInfo().ID, Meta: agentNodeInfo().Meta},
		"another ID":          func() NodeInfo { n := agentNodeInfo(); n.ID = "0b5d7c5e-0000-4000-8000-00000000000c"; return n }(),
		"meta value replaced": func() NodeInfo { n := agentNodeInfo(); n.Meta["rack"] = "r9"; return n }(),
	} {
		t.Run(name, func(t *testing.T) {
			cat := NewMemCatalog()
			s := newNodeSynced(cat)
			if err := s.syncFull(); err != nil {
				t.Fatal(err)
			}
			cat.putNode(node, drift)
			mustSync(t, s)
			if got, _ := cat.record(node); !drift.same(got) {
				t.Fatalf("a partial sync rewrote the node: %+v", got)
			}
			if err := s.syncFull(); err != nil {
				t.Fatal(err)
			}
			if got, _ := cat.record(node); !agentNodeInfo().same(got) {
				t.Errorf("full sync left the rewritten record: %+v", got)
			}
		})
	}
}

// TestFullSyncWithNodeInfoRepairsServices: the read that brings the node's
// record also brings its services, and a full sync repairs those as it does
// without a record: a service dropped behind the agent's back comes back,
// one the agent does not have goes.
func TestFullSyncWithNodeInfoRepairsServices(t *testing.T) {
	cat := NewMemCatalog()
	st, s := newNodeSyncedState(cat)
	st.addService(Service{ID: "web", Service: "web"}, regToken{})
	if err := s.syncFull(); err != nil {
		t.Fatal(err)
	}
	cat.drop(node, "web", "")
	cat.put(node, &Service{ID: "stray", Service: "stray"}, nil)
	if err := s.syncFull(); err != nil {
		t.Fatal(err)
	}
	svcs, _ := cat.NodeServices(node)
	if len(svcs) != 1 || svcs[0].ID != "web" {
		t.Errorf("catalog services after the full sync: %+v, want web alone", svcs)
	}
}

// TestNodeInfoWriteRetriedAfterFailure: a failed write of the record is an
// error of the sync and is made again by the next one; a refusal for ACLs
// counts as done, as for services.
func TestNodeInfoWriteRetriedAfterFailure(t *testing.T) {
	cat := &nodeHookCatalog{MemCatalog: NewMemCatalog(), fail: errors.New("no leader")}
	s := newNodeSynced(cat)
	if err := s.SyncChanges(); err == nil {
		t.Fatal("a sync whose node write failed reported no error")
	}
	if _, found := cat.record(node); found {
		t.Fatal("the failed write left a node")
	}
	cat.fail = nil
	mustSync(t, s)
	if got, _ := cat.record(node); !agentNodeInfo().same(got) {
		t.Errorf("the retry did not write the record: %+v", got)
	}

	denied := &nodeHookCatalog{MemCatalog: NewMemCatalog(), fail: ErrPermissionDenied}
	s = newNodeSynced(denied)
	if err := s.SyncChanges(); err != nil {
		t.Fatalf("an ACL refusal failed the sync: %v", err)
	}
	mustSync(t, s)
	if denied.attempts != 1 {
		t.Errorf("a refused node write was tried %d times, want once until the next full sync", denied.attempts)
	}
}

// TestNodeInfoNeedsTheCapability: without NodeInfo, or with a Catalog that
// cannot write nodes, the Syncer leaves the node alone.
func TestNodeInfoNeedsTheCapability(t *testing.T) {
	cat := NewMemCatalog()
	_, s := newSynced(cat) // no NodeInfo
	if err := s.syncFull(); err != nil {
		t.Fatal(err)
	}
	if _, found := cat.record(node); found || cat.Writes() != 0 {
		t.Errorf("a syncer without NodeInfo wrote the node (found %v, %d writes)", found, cat.Writes())
	}
	info := agentNodeInfo()
	s = newSyncer(newState(node, 0, zero), servicesOnly{cat}, SyncConfig{Stagger: zero, NodeInfo: &info})
	if err := s.syncFull(); err != nil {
		t.Fatal(err)
	}
	if cat.Writes() != 0 {
		t.Errorf("a syncer over a services-only catalog made %d writes", cat.Writes())
	}
}

// servicesOnly hides MemCatalog's node methods.
type servicesOnly struct{ Catalog }

// nodeHookCatalog fails node writes with fail while it is set, counting
// attempts.
type nodeHookCatalog struct {
	*MemCatalog
	fail     error
	attempts int
}

func (c *nodeHookCatalog) RegisterNode(n string, info NodeInfo) error {
	c.attempts++
	if c.fail != nil {
		return c.fail
	}
	return c.MemCatalog.RegisterNode(n, info)
}
