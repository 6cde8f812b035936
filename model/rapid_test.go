package model_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tenurekv/tenure/model"
)

// Small universes make collisions (same key, same session, same check) likely.
var (
	nodeNames  = []string{"n1", "n2", ""}
	checkIDs   = []string{"serfHealth", "web", ""}
	sessionIDs = []string{"s1", "s2", "s3", "ghost", ""}
	keys       = []string{"a", "a/b", "b", ""}
	serviceIDs = []string{"web", "db", ""}
	queryIDs   = []string{"q1", "q2", ""}
	queryVerbs = []model.QueryVerb{model.QueryCreate, model.QueryUpdate, model.QueryDelete, "bogus"}
	statuses   = []model.Health{model.HealthPassing, model.HealthWarning, model.HealthCritical, "bogus"}
	ttls       = []string{"", "0s", "9s", "10s", "1h", "25h", "nope", "-10s"}
	behaviors  = []model.Behavior{"", model.BehaviorRelease, model.BehaviorDelete, "destroy"}
	verbs      = []model.KVVerb{model.KVSet, model.KVCAS, model.KVLock, model.KVUnlock, model.KVGet,
		model.KVGetOrEmpty, model.KVGetTree, model.KVCheckIndex, model.KVCheckSession,
		model.KVCheckNotExists, model.KVCheckSequencer, model.KVDelete, model.KVDeleteTree,
		model.KVDeleteCAS, "bogus"}
)

func genKVOp(t *rapid.T, label string) model.KVOp {
	return model.KVOp{
		Verb:          rapid.SampledFrom(verbs).Draw(t, label+"verb"),
		Key:           rapid.SampledFrom(keys).Draw(t, label+"key"),
		Value:         []byte(rapid.SampledFrom([]string{"", "x", "y"}).Draw(t, label+"value")),
		Flags:         rapid.Uint64Range(0, 2).Draw(t, label+"flags"),
		Index:         rapid.Uint64Range(0, 40).Draw(t, label+"index"),
		Session:       rapid.SampledFrom(sessionIDs).Draw(t, label+"session"),
		LockDelaySeen: rapid.Uint64Range(0, 40).Draw(t, label+"seen"),
	}
}

// genCommand draws any command, valid or not.
func genCommand(t *rapid.T) model.Command {
	switch rapid.IntRange(0, 8).Draw(t, "kind") {
	case 8:
		return model.Command{ACL: genACLOp(t)} // aclrapid_test.go
	case 0:
		r := &model.Register{Node: rapid.SampledFrom(nodeNames).Draw(t, "node"),
			// Few IDs, in both cases, so renames and name reservations (S62) happen.
			ID: rapid.SampledFrom([]string{"", "", "4f5a3c1e-0000-4000-8000-000000000001",
				"4F5A3C1E-0000-4000-8000-000000000001", "4f5a3c1e-0000-4000-8000-000000000002"}).Draw(t, "id"),
			NodeMeta:       rapid.SampledFrom([]map[string]string{nil, {}, {"rack": "r1"}}).Draw(t, "meta"),
			SkipNodeUpdate: rapid.Bool().Draw(t, "skip"), KeepRecord: rapid.Bool().Draw(t, "keep")}
		for i := range rapid.IntRange(0, 2).Draw(t, "nservices") {
			r.Services = append(r.Services, model.ServiceSpec{
				ID:      rapid.SampledFrom(serviceIDs).Draw(t, fmt.Sprint("sid", i)),
				Service: rapid.SampledFrom([]string{"web", "www", ""}).Draw(t, fmt.Sprint("sname", i)),
				Tags:    rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b"}), 0, 2).Draw(t, fmt.Sprint("tags", i)),
			})
		}
		for i := range rapid.IntRange(0, 2).Draw(t, "nchecks") {
			r.Checks = append(r.Checks, model.CheckSpec{
				CheckID:   rapid.SampledFrom(checkIDs).Draw(t, fmt.Sprint("check", i)),
				Status:    rapid.SampledFrom(statuses).Draw(t, fmt.Sprint("status", i)),
				ServiceID: rapid.SampledFrom(serviceIDs).Draw(t, fmt.Sprint("csid", i)),
			})
		}
		return model.Command{Register: r}
	case 1:
		return model.Command{Deregister: &model.Deregister{
			Node:      rapid.SampledFrom(nodeNames).Draw(t, "node"),
			ServiceID: rapid.SampledFrom(serviceIDs).Draw(t, "service"),
			CheckID:   rapid.SampledFrom(checkIDs).Draw(t, "check"),
		}}
	case 2:
		var svcChecks []model.ServiceCheck
		for _, id := range rapid.SliceOfN(rapid.SampledFrom(checkIDs), 0, 1).Draw(t, "svcchecks") {
			svcChecks = append(svcChecks, model.ServiceCheck{ID: id})
		}
		return model.Command{CreateSession: &model.CreateSession{
			ID:            rapid.SampledFrom(sessionIDs).Draw(t, "id"),
			Node:          rapid.SampledFrom(nodeNames).Draw(t, "node"),
			Checks:        rapid.SliceOfN(rapid.SampledFrom(checkIDs), 0, 2).Draw(t, "checks"),
			NodeChecks:    rapid.SliceOfN(rapid.SampledFrom(checkIDs), 0, 1).Draw(t, "nodechecks"),
			ServiceChecks: svcChecks,
			LockDelay:     time.Duration(rapid.IntRange(-1, 90).Draw(t, "delay")) * time.Second,
			Behavior:      rapid.SampledFrom(behaviors).Draw(t, "behavior"),
			TTL:           rapid.SampledFrom(ttls).Draw(t, "ttl"),
		}}
	case 7:
		return model.Command{Query: &model.QueryOp{
			Op: rapid.SampledFrom(queryVerbs).Draw(t, "qop"),
			Query: model.PreparedQuery{
				ID:      rapid.SampledFrom(queryIDs).Draw(t, "qid"),
				Name:    rapid.SampledFrom([]string{"", "web", "WEB", "q1"}).Draw(t, "qname"),
				Session: rapid.SampledFrom(sessionIDs).Draw(t, "qsession"),
				Service: model.ServiceQuery{Service: rapid.SampledFrom([]string{"", "web"}).Draw(t, "qservice")},
			},
		}}
	case 3:
		return model.Command{DestroySession: &model.DestroySession{ID: rapid.SampledFrom(sessionIDs).Draw(t, "id")}}
	case 4, 5:
		op := genKVOp(t, "")
		return model.Command{KV: &op}
	default:
		var txn model.Txn
		for i := range rapid.IntRange(0, 4).Draw(t, "nops") {
			txn.Ops = append(txn.Ops, genTxnOp(t, fmt.Sprint("op", i)))
		}
		return model.Command{Txn: &txn}
	}
}

var catalogVerbs = []model.CatalogVerb{model.CatalogGet, model.CatalogSet, model.CatalogCAS,
	model.CatalogDelete, model.CatalogDeleteCAS, "bogus"}

// genTxnOp draws a txn op: mostly KV, else a node, service, check or
// session op (S68, S69), valid or not.
func genTxnOp(t *rapid.T, label string) model.TxnOp {
	verb := rapid.SampledFrom(catalogVerbs).Draw(t, label+"cverb")
	node := rapid.SampledFrom(nodeNames).Draw(t, label+"cnode")
	index := rapid.Uint64Range(0, 40).Draw(t, label+"cindex")
	switch rapid.IntRange(0, 7).Draw(t, label+"kind") {
	case 0:
		return model.TxnOp{Node: &model.NodeTxnOp{Verb: verb, Node: node, Index: index,
			ID:      rapid.SampledFrom([]string{"", "4f5a3c1e-0000-4000-8000-000000000001", "bad"}).Draw(t, label+"cid"),
			Address: rapid.SampledFrom([]string{"", "10.0.0.1"}).Draw(t, label+"caddr")}}
	case 1:
		return model.TxnOp{Service: &model.ServiceTxnOp{Verb: verb, Node: node, Index: index,
			Service: model.ServiceSpec{ID: rapid.SampledFrom(serviceIDs).Draw(t, label+"csid"),
				Service: rapid.SampledFrom([]string{"web", ""}).Draw(t, label+"csname")}}}
	case 2:
		return model.TxnOp{Check: &model.CheckTxnOp{Verb: verb, Node: node, Index: index,
			Check: model.CheckSpec{CheckID: rapid.SampledFrom(checkIDs).Draw(t, label+"ccheck"),
				Status:    rapid.SampledFrom(append(statuses, "")).Draw(t, label+"cstatus"),
				ServiceID: rapid.SampledFrom(serviceIDs).Draw(t, label+"ccsid")}}}
	case 3:
		return model.TxnOp{Session: &model.SessionTxnOp{
			Verb: rapid.SampledFrom([]model.SessionVerb{model.SessionDelete, "bogus"}).Draw(t, label+"sverb"),
			ID:   rapid.SampledFrom(sessionIDs).Draw(t, label+"sid")}}
	}
	op := genKVOp(t, label)
	return model.TxnOp{KV: &op}
}

// TestRandomCommandsKeepInvariants: every reachable state satisfies every
// invariant, every step satisfies the transition rules, and a rejected
// command changes nothing and says why.
func TestRandomCommandsKeepInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := model.New()
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			cmd := genCommand(t)
			prev := s.Clone()
			prevHash := s.Hash()
			res := s.Apply(uint64(i+1), cmd)
			if err := s.CheckInvariants(); err != nil {
				t.Fatalf("step %d %+v: %v", i, cmd, err)
			}
			if err := model.CheckTransition(prev, s, res); err != nil {
				t.Fatalf("step %d %+v: %v", i, cmd, err)
			}
			if res.Err != nil && res.Err.Msg == "" {
				t.Fatalf("step %d: rejection without a reason", i)
			}
			if res.Failed() && s.Hash() != prevHash {
				t.Fatalf("step %d: rejected command changed the hash", i)
			}
			// KeysChanged names exactly the keys whose entry or deletion
			// changed: servers wake only those keys' blocking reads.
			for _, k := range keys {
				before, had := prev.Get(k)
				after, has := s.Get(k)
				tb, _ := prev.Tombstone(k)
				ta, _ := s.Tombstone(k)
				changed := had != has || tb != ta || (had && has && before.ModifyIndex != after.ModifyIndex)
				if changed != slices.Contains(res.KeysChanged, k) {
					t.Fatalf("step %d %+v: key %q changed=%v, but KeysChanged=%v", i, cmd, k, changed, res.KeysChanged)
				}
			}
			for _, te := range res.TxnErrors {
				if te.What == "" {
					t.Fatalf("step %d: txn error without a reason", i)
				}
			}
		}
	})
}

// TestCloneIsIndependentAndHashStable: a clone equals and hashes like its
// source, and applying to the clone leaves the source untouched.
func TestCloneIsIndependentAndHashStable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := model.New()
		n := rapid.IntRange(1, 30).Draw(t, "steps")
		for i := range n {
			s.Apply(uint64(i+1), genCommand(t))
		}
		c := s.Clone()
		if !c.Equal(s) || c.Hash() != s.Hash() {
			t.Fatalf("clone differs from source")
		}
		before := s.Hash()
		for i := range 10 {
			c.Apply(uint64(n+i+1), genCommand(t))
		}
		if s.Hash() != before {
			t.Fatalf("applying to a clone changed the source")
		}
		if !c.Equal(s) && c.Hash() == s.Hash() {
			t.Logf("hash collision between different states (allowed, but unlikely)")
		}
	})
}

// TestLockHeldByOtherMatchesApply: LockHeldByOther is true exactly when
// Apply would answer a stand-alone lock with a plain refusal that changes
// nothing (S29), so a leader answering from it says what the log would.
func TestLockHeldByOtherMatchesApply(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Start from held keys and live sessions, which random commands
		// alone seldom reach, then let random commands change them.
		s := model.New()
		start := []model.Command{
			{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing}}}},
			{CreateSession: &model.CreateSession{ID: "s1", Node: "n1"}},
			{CreateSession: &model.CreateSession{ID: "s2", Node: "n1", Behavior: model.BehaviorDelete}},
			{KV: &model.KVOp{Verb: model.KVLock, Key: "a", Session: "s1"}},
			{KV: &model.KVOp{Verb: model.KVLock, Key: "b", Session: "s2"}},
		}
		for i, cmd := range start {
			if res := s.Apply(uint64(i+1), cmd); res.Failed() {
				t.Fatalf("setup %+v: %+v", cmd, res)
			}
		}
		n := len(start) + rapid.IntRange(0, 20).Draw(t, "steps")
		for i := len(start); i < n; i++ {
			s.Apply(uint64(i+1), genCommand(t))
		}
		op := genKVOp(t, "lock")
		op.Verb = rapid.SampledFrom([]model.KVVerb{model.KVLock, model.KVLock, model.KVUnlock}).Draw(t, "verb")
		op.LockDelaySeen = 0
		held := s.LockHeldByOther(op)
		after := s.Clone()
		res := after.Apply(uint64(n+1), model.Command{KV: &op})
		plainRefusal := op.Verb == model.KVLock && res.Err == nil && !res.OK && after.Equal(s)
		if held != plainRefusal {
			t.Fatalf("LockHeldByOther(%+v) = %v, but Apply answered %+v", op, held, res)
		}
	})
}

// TestLockHeldByOtherOnlyForLocks: only a well-formed stand-alone lock can
// be a held-key refusal; any other verb on a held key, or a malformed lock,
// is not one, whoever holds the key.
func TestLockHeldByOtherOnlyForLocks(t *testing.T) {
	s := model.New()
	for i, cmd := range []model.Command{
		{Register: &model.Register{Node: "n1", Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing}}}},
		{CreateSession: &model.CreateSession{ID: "s1", Node: "n1"}},
		{CreateSession: &model.CreateSession{ID: "s2", Node: "n1"}},
		{KV: &model.KVOp{Verb: model.KVLock, Key: "a", Session: "s1"}},
	} {
		if res := s.Apply(uint64(i+1), cmd); res.Failed() {
			t.Fatalf("setup %+v: %+v", cmd, res)
		}
	}
	if !s.LockHeldByOther(model.KVOp{Verb: model.KVLock, Key: "a", Session: "s2"}) {
		t.Fatal("a lock of a key another live session holds is a held-key refusal")
	}
	for _, op := range []model.KVOp{
		{Verb: model.KVUnlock, Key: "a", Session: "s2"},
		{Verb: model.KVSet, Key: "a", Session: "s2"},
		{Verb: model.KVCheckSession, Key: "a", Session: "s2"},
		{Verb: model.KVLock, Key: "a", Session: "s2", Value: make([]byte, model.MaxValueSize+1)},
		{Verb: model.KVLock, Key: "a", Session: "s1"},
		{Verb: model.KVLock, Key: "a", Session: "ghost"},
	} {
		if s.LockHeldByOther(op) {
			t.Errorf("LockHeldByOther(%s %q by %q, %d-byte value) = true", op.Verb, op.Key, op.Session, len(op.Value))
		}
	}
}

// TestCloneSinceEqualsClone: a copy that shares the tables unchanged since
// the previous copy (CloneSince, the FSM's observed path) equals a full
// Clone after every step, reaps included, and no later step changes an
// earlier copy.
func TestCloneSinceEqualsClone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := model.New()
		prev := s.Clone()
		var copies []*model.State
		var hashes []uint64
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			index := uint64(i + 1)
			cmd := genCommand(t)
			if rapid.IntRange(0, 5).Draw(t, "reap") == 0 {
				cmd = model.Command{Reap: &model.Reap{Index: rapid.Uint64Range(0, index).Draw(t, "through")}}
			}
			s.Apply(index, cmd)
			next := s.CloneSince(prev)
			if !next.Equal(s) || next.Hash() != s.Hash() {
				t.Fatalf("step %d %+v: CloneSince differs from the state", i, cmd)
			}
			if err := next.CheckInvariants(); err != nil {
				t.Fatalf("step %d %+v: CloneSince: %v", i, cmd, err)
			}
			copies, hashes = append(copies, next), append(hashes, next.Hash())
			prev = next
		}
		// The node-name indexes are not in Equal: the same command must
		// do the same to the copy as to the state.
		cmd := genCommand(t)
		c := prev.Clone()
		if got, want := c.Apply(1000, cmd), s.Apply(1000, cmd); !c.Equal(s) || got.Err != nil != (want.Err != nil) {
			t.Fatalf("%+v applied to the last copy: %+v, to the state: %+v", cmd, got, want)
		}
		for i, cp := range copies {
			if cp.Hash() != hashes[i] {
				t.Fatalf("copy %d changed after it was taken", i)
			}
		}
	})
}

// TestIteratorsYieldEveryRecord: Nodes, Checks and Queries yield what
// NodeList, CheckList and QueryList list, and stop when asked to.
func TestIteratorsYieldEveryRecord(t *testing.T) {
	s := model.New()
	for i, n := range []string{"n1", "n2"} {
		s.Apply(uint64(2*i+1), model.Command{Register: &model.Register{Node: n, Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing}}}})
		s.Apply(uint64(2*i+2), model.Command{Query: &model.QueryOp{Op: model.QueryCreate, Query: model.PreparedQuery{ID: "q" + n, Name: "web-" + n, Service: model.ServiceQuery{Service: "web"}}}})
	}
	var nodes []string
	for name, n := range s.Nodes() {
		if name != n.Name {
			t.Errorf("Nodes yielded %q for node %q", name, n.Name)
		}
		nodes = append(nodes, name)
	}
	var checks []model.Check
	for k, c := range s.Checks() {
		if k != (model.CheckKey{Node: c.Node, CheckID: c.CheckID}) {
			t.Errorf("Checks yielded %v for check %+v", k, c)
		}
		checks = append(checks, c)
	}
	var queries []model.PreparedQuery
	for id, q := range s.Queries() {
		if id != q.ID {
			t.Errorf("Queries yielded %q for query %q", id, q.ID)
		}
		queries = append(queries, q)
	}
	slices.Sort(nodes)
	slices.SortFunc(checks, func(a, b model.Check) int { return strings.Compare(a.Node, b.Node) })
	slices.SortFunc(queries, func(a, b model.PreparedQuery) int { return strings.Compare(a.ID, b.ID) })
	var listed []string
	for _, n := range s.NodeList() {
		listed = append(listed, n.Name)
	}
	if !slices.Equal(nodes, listed) || len(nodes) != 2 {
		t.Errorf("Nodes yielded %v, NodeList lists %v", nodes, listed)
	}
	if !slices.Equal(checks, s.CheckList("", "")) || len(checks) != 2 {
		t.Errorf("Checks yielded %v, CheckList lists %v", checks, s.CheckList("", ""))
	}
	if len(queries) != 2 || !slices.EqualFunc(queries, s.QueryList(), func(a, b model.PreparedQuery) bool { return a.ID == b.ID }) {
		t.Errorf("Queries yielded %v, QueryList lists %v", queries, s.QueryList())
	}
	for range s.Nodes() {
		break
	}
	for range s.Checks() {
		break
	}
	for range s.Queries() {
		break
	}
}

// TestAbortedTxnRestoresEveryTable (S44, S68, S69): whatever a txn's
// catalog, session and KV ops did before one of them failed, the state
// afterwards equals the state before, and nothing is reported invalidated.
func TestAbortedTxnRestoresEveryTable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := model.New()
		start := []model.Command{
			{Register: &model.Register{Node: "n1", Services: []model.ServiceSpec{{ID: "web", Service: "web"}},
				Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing},
					{CheckID: "web", Status: model.HealthPassing, ServiceID: "web"}}}},
			{CreateSession: &model.CreateSession{ID: "s1", Node: "n1", Checks: []string{"web"}}},
			{CreateSession: &model.CreateSession{ID: "s2", Node: "n1", Behavior: model.BehaviorDelete}},
			{KV: &model.KVOp{Verb: model.KVLock, Key: "a", Session: "s1"}},
			{KV: &model.KVOp{Verb: model.KVLock, Key: "b", Session: "s2"}},
			{Query: &model.QueryOp{Op: model.QueryCreate, Query: model.PreparedQuery{ID: "q1", Session: "s1",
				Service: model.ServiceQuery{Service: "web"}}}},
		}
		for i, cmd := range start {
			if res := s.Apply(uint64(i+1), cmd); res.Failed() {
				t.Fatalf("setup %+v: %+v", cmd, res)
			}
		}
		n := len(start) + rapid.IntRange(0, 10).Draw(t, "steps")
		for i := len(start); i < n; i++ {
			s.Apply(uint64(i+1), genCommand(t))
		}
		var txn model.Txn
		for i := range rapid.IntRange(1, 5).Draw(t, "nops") {
			txn.Ops = append(txn.Ops, genTxnOp(t, fmt.Sprint("op", i)))
		}
		// Always fails at run time, after the ops before it ran.
		txn.Ops = append(txn.Ops, model.TxnOp{KV: &model.KVOp{Verb: model.KVGet, Key: "never-written"}})
		prev, prevHash := s.Clone(), s.Hash()
		res := s.Apply(uint64(n+1), model.Command{Txn: &txn})
		if !res.Failed() {
			t.Fatalf("txn ending in a get of a missing key committed: %+v", res)
		}
		if !s.Equal(prev) || s.Hash() != prevHash {
			t.Fatalf("aborted txn %+v changed the state", txn)
		}
		if len(res.Invalidated) != 0 || len(res.LockDelays) != 0 || len(res.QueriesDeleted) != 0 || len(res.KeysChanged) != 0 {
			t.Fatalf("aborted txn reported effects: %+v", res)
		}
	})
}
