package model_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// withCatalog builds a valid state with services and a prepared query: node
// n1 runs service web1 ("web") with check web1-http, session s bound to
// serfHealth through NodeChecks and to web1-http through ServiceChecks, and
// query q bound to s.
func withCatalog(t *testing.T) *model.State {
	t.Helper()
	s := model.New()
	cmds := []model.Command{
		{Register: &model.Register{Node: "n1",
			Services: []model.ServiceSpec{{ID: "web1", Service: "web", Tags: []string{"v1"}, Meta: map[string]string{"z": "a"}}},
			Checks: []model.CheckSpec{{CheckID: "serfHealth", Status: model.HealthPassing},
				{CheckID: "web1-http", Status: model.HealthPassing, ServiceID: "web1", Type: "http", Output: "ok"}}}},
		{CreateSession: &model.CreateSession{ID: "s", Node: "n1", NodeChecks: []string{"serfHealth"},
			ServiceChecks: []model.ServiceCheck{{ID: "web1-http"}}}},
		{Query: &model.QueryOp{Op: model.QueryCreate, Query: model.PreparedQuery{ID: "q", Session: "s",
			Service: model.ServiceQuery{Service: "web", Tags: []string{"v1"}}}}},
		{Query: &model.QueryOp{Op: model.QueryCreate, Query: model.PreparedQuery{ID: "named", Name: "web",
			Service: model.ServiceQuery{Service: "web"}}}},
	}
	for i, c := range cmds {
		if res := s.Apply(uint64(i+1), c); res.Failed() {
			t.Fatalf("setup step %d failed: %+v", i, res.Err)
		}
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatalf("setup state is not healthy: %v", err)
	}
	return s
}

var (
	webKey  = model.ServiceKey{Node: "n1", ServiceID: "web1"}
	httpKey = model.CheckKey{Node: "n1", CheckID: "web1-http"}
)

// TestCatalogInvariantsCatchCorruption: each invariant over services,
// service checks, session check lists and prepared queries rejects a state
// broken on purpose.
func TestCatalogInvariantsCatchCorruption(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(s *model.Snapshot)
		want    string
	}{
		{"service on a missing node", func(s *model.Snapshot) {
			sv := s.Services[webKey]
			sv.Node = "gone"
			delete(s.Services, webKey)
			s.Services[model.ServiceKey{Node: "gone", ServiceID: "web1"}] = sv
		}, model.InvServiceNode},
		{"two nodes with one ID, ignoring case", func(s *model.Snapshot) {
			// A node without an ID, sorted first, must not end the search.
			a, n1, n2 := s.Nodes["n1"], s.Nodes["n1"], s.Nodes["n1"]
			a.Name = "a"
			n1.ID, n2.Name, n2.ID = "4F5A3C1E-0000-4000-8000-000000000001", "n2", "4f5a3c1e-0000-4000-8000-000000000001"
			s.Nodes["a"], s.Nodes["n1"], s.Nodes["n2"] = a, n1, n2
		}, model.InvNodeIDUnique},
		{"service index beyond its table", func(s *model.Snapshot) {
			sv := s.Services[webKey]
			sv.ModifyIndex = 99
			s.Services[webKey] = sv
		}, model.InvIndexBounds},
		{"check outlives its service", func(s *model.Snapshot) { delete(s.Services, webKey) }, model.InvCheckService},
		{"check names another service name", func(s *model.Snapshot) {
			c := s.Checks[httpKey]
			c.ServiceName = "www"
			s.Checks[httpKey] = c
		}, model.InvCheckService},
		{"node check names a service", func(s *model.Snapshot) {
			k := model.CheckKey{Node: "n1", CheckID: "serfHealth"}
			c := s.Checks[k]
			c.ServiceName = "web"
			s.Checks[k] = c
		}, model.InvCheckService},
		{"session outlives its service check", func(s *model.Snapshot) {
			delete(s.Checks, httpKey)
		}, model.InvSessionChecks},
		{"session bound to a critical service check", func(s *model.Snapshot) {
			c := s.Checks[httpKey]
			c.Status = model.HealthCritical
			s.Checks[httpKey] = c
		}, model.InvSessionChecks},
		{"session bound to a critical node check", func(s *model.Snapshot) {
			k := model.CheckKey{Node: "n1", CheckID: "serfHealth"}
			c := s.Checks[k]
			c.Status = model.HealthCritical
			s.Checks[k] = c
		}, model.InvSessionChecks},
		{"query outlives its session", func(s *model.Snapshot) {
			delete(s.Sessions, "s")
		}, model.InvQuerySession},
		{"service never created", func(s *model.Snapshot) {
			sv := s.Services[webKey]
			sv.CreateIndex = 0
			s.Services[webKey] = sv
		}, model.InvIndexBounds},
		{"coordinate outlives its node", func(s *model.Snapshot) {
			s.Coordinates = map[model.CoordKey]model.Coord{{Node: "gone"}: {Vec: []float64{0, 0}}}
		}, model.InvCoordinateNode},
		{"query never created", func(s *model.Snapshot) {
			q := s.Queries["named"]
			q.CreateIndex = 0
			s.Queries["named"] = q
		}, model.InvIndexBounds},
		{"query index beyond its table", func(s *model.Snapshot) {
			q := s.Queries["named"]
			q.ModifyIndex = 99
			s.Queries["named"] = q
		}, model.InvIndexBounds},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			broken := edit(withCatalog(t), c.corrupt)
			wantViolation(t, broken.CheckInvariants(), c.want)
		})
	}
}

// TestClientDeleteOfBoundQueryIsNoViolation: a client may delete a query
// bound to a live session; that is its own delete (Result.QueryID), not an
// invalidation effect (S58), so the transition check accepts it.
func TestClientDeleteOfBoundQueryIsNoViolation(t *testing.T) {
	prev := withCatalog(t)
	next := prev.Clone()
	res := next.Apply(10, model.Command{Query: &model.QueryOp{Op: model.QueryDelete, Query: model.PreparedQuery{ID: "q"}}})
	if res.Err != nil || res.QueryID != "q" {
		t.Fatalf("delete of q: %+v", res)
	}
	if err := model.CheckTransition(prev, next, res); err != nil {
		t.Fatalf("a client's delete of a session-bound query is reported: %v", err)
	}
}

// TestCatalogTransitionCatchesBadSteps: a prepared query may vanish only by
// its own delete or with its session, and either must be reported.
func TestCatalogTransitionCatchesBadSteps(t *testing.T) {
	const idx = 10
	cases := []struct {
		name    string
		cmd     model.Command
		corrupt func(next *model.Snapshot, res *model.Result)
	}{
		{"query deleted by an unrelated write",
			model.Command{KV: &model.KVOp{Verb: model.KVSet, Key: "z"}},
			func(next *model.Snapshot, _ *model.Result) { delete(next.Queries, "named") }},
		{"query deleted with its session but not reported",
			model.Command{DestroySession: &model.DestroySession{ID: "s"}},
			func(_ *model.Snapshot, res *model.Result) { res.QueriesDeleted = nil }},
		{"query of another session reported deleted",
			model.Command{Query: &model.QueryOp{Op: model.QueryDelete, Query: model.PreparedQuery{ID: "named"}}},
			func(next *model.Snapshot, res *model.Result) {
				delete(next.Queries, "q")
				res.QueryID = "q"
				res.QueriesDeleted = []string{"named"}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := withCatalog(t)
			next := prev.Clone()
			res := next.Apply(idx, c.cmd)
			if err := model.CheckTransition(prev, next, res); err != nil {
				t.Fatalf("uncorrupted step already fails: %v", err)
			}
			next = edit(next, func(n *model.Snapshot) { c.corrupt(n, &res) })
			wantViolation(t, model.CheckTransition(prev, next, res), model.InvInvalidationEffects)
		})
	}
}

// TestCatalogSnapshotRoundTrip: services, service checks, session check
// lists and queries survive Snapshot and Restore, and Restore refuses a
// service or query filed under another key.
func TestCatalogSnapshotRoundTrip(t *testing.T) {
	s := withCatalog(t)
	got, err := model.Restore(s.Snapshot())
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !got.Equal(s) || got.Hash() != s.Hash() {
		t.Fatal("restored state differs from the original")
	}
	for name, tc := range map[string]struct {
		edit func(s *model.Snapshot)
		want string
	}{
		"service under another key": {func(s *model.Snapshot) {
			sv := s.Services[webKey]
			sv.ServiceID = "web2"
			s.Services[webKey] = sv
		}, "service n1/web2 stored under n1/web1"},
		"query under another ID": {func(s *model.Snapshot) {
			q := s.Queries["q"]
			q.ID = "r"
			s.Queries["q"] = q
		}, `prepared query "r" stored under "q"`},
	} {
		t.Run(name, func(t *testing.T) {
			snap := s.Snapshot()
			tc.edit(&snap)
			if _, err := model.Restore(snap); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("restore error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCatalogFieldsReachHashAndEqual: a change to any new field makes the
// states unequal and (for these cases) hash differently, so replicas that
// disagree on them are caught.
func TestCatalogFieldsReachHashAndEqual(t *testing.T) {
	base := withCatalog(t)
	for name, f := range map[string]func(s *model.Snapshot){
		"service tags": func(s *model.Snapshot) {
			sv := s.Services[webKey]
			sv.Tags = []string{"v2"}
			s.Services[webKey] = sv
		},
		"service meta": func(s *model.Snapshot) {
			sv := s.Services[webKey]
			sv.Meta = map[string]string{"z": "b"}
			s.Services[webKey] = sv
		},
		"check output": func(s *model.Snapshot) {
			c := s.Checks[httpKey]
			c.Output = "changed"
			s.Checks[httpKey] = c
		},
		"session service checks": func(s *model.Snapshot) {
			se := s.Sessions["s"]
			se.ServiceChecks = []model.ServiceCheck{{ID: "web1-http", Namespace: "x"}}
			s.Sessions["s"] = se
		},
		"session node checks": func(s *model.Snapshot) {
			se := s.Sessions["s"]
			se.NodeChecks = nil
			s.Sessions["s"] = se
		},
		"query tags": func(s *model.Snapshot) {
			q := s.Queries["q"]
			q.Service.Tags = []string{"v2"}
			s.Queries["q"] = q
		},
		"query only-passing": func(s *model.Snapshot) {
			q := s.Queries["q"]
			q.Service.OnlyPassing = true
			s.Queries["q"] = q
		},
	} {
		t.Run(name, func(t *testing.T) {
			changed := edit(base, f)
			if changed.Equal(base) || changed.Hash() == base.Hash() {
				t.Fatalf("a change to %s is invisible to Equal or Hash", name)
			}
		})
	}
}

// TestSessionCheckIDs: the bound set is the union of the three lists, each
// ID once, in list order.
func TestSessionCheckIDs(t *testing.T) {
	se := model.Session{Checks: []string{"a", "b"}, NodeChecks: []string{"b", "serfHealth"},
		ServiceChecks: []model.ServiceCheck{{ID: "a"}, {ID: "svc"}}}
	got := se.CheckIDs()
	want := []string{"a", "b", "serfHealth", "svc"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("CheckIDs = %v, want %v", got, want)
	}
}

// TestCatalogAccessors: the point reads return what the lists hold.
func TestCatalogAccessors(t *testing.T) {
	s := withCatalog(t)
	sv, ok := s.Service(webKey)
	if !ok || sv.Service != "web" || sv.Port != 0 || sv.Meta["z"] != "a" {
		t.Fatalf("Service(%v) = %+v, %v", webKey, sv, ok)
	}
	if _, ok := s.Service(model.ServiceKey{Node: "n2", ServiceID: "web1"}); ok {
		t.Fatal("a service ID is found on another node")
	}
	q, ok := s.Query("q")
	if !ok || q.Session != "s" || q.CreateIndex != 3 {
		t.Fatalf("Query(q) = %+v, %v", q, ok)
	}
	if r, ok := s.ResolveQuery("WEB"); !ok || r.ID != "named" {
		t.Fatalf("ResolveQuery(WEB) = %+v, %v", r, ok)
	}
	c, ok := s.Check(httpKey)
	if !ok || c.ServiceName != "web" || c.Type != "http" || c.Output != "ok" {
		t.Fatalf("Check(%v) = %+v, %v", httpKey, c, ok)
	}
}

// TestServiceNamesOnSomeNodes: with a node filter, /v1/catalog/services'
// answer counts only the instances on the nodes it keeps (S62's ?node-meta).
func TestServiceNamesOnSomeNodes(t *testing.T) {
	s := model.New()
	for i, reg := range []model.Register{
		{Node: "n1", NodeMeta: map[string]string{"rack": "r1"}, Services: []model.ServiceSpec{{Service: "web", Tags: []string{"a"}}}},
		{Node: "n2", Services: []model.ServiceSpec{{Service: "web", Tags: []string{"b"}}, {Service: "db"}}},
		{Node: "n3", NodeMeta: map[string]string{"rack": "r1"}, Services: []model.ServiceSpec{{Service: "cache"}}},
	} {
		if res := s.Apply(uint64(i+1), model.Command{Register: &reg}); res.Failed() {
			t.Fatal(res.Err)
		}
	}
	rack1 := func(n model.Node) bool { return n.Meta["rack"] == "r1" }
	if got, want := s.ServiceNames(rack1), map[string][]string{"web": {"a"}, "cache": {}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("services on rack r1: %v, want %v", got, want)
	}
	if got, want := s.ServiceNames(nil), map[string][]string{"web": {"a", "b"}, "db": {}, "cache": {}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("all services: %v, want %v", got, want)
	}
}
