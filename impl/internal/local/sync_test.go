package local

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tenurekv/tenure/impl/internal/checks"
)

// hookCatalog is a MemCatalog whose writes can run a hook first (to change
// local state while a write is in flight, or to fail one write) and which
// counts write attempts, failed ones included.
type hookCatalog struct {
	*MemCatalog
	attempts    int
	beforeWrite func(what string) error
}

func newHook() *hookCatalog { return &hookCatalog{MemCatalog: NewMemCatalog()} }

func (h *hookCatalog) hook(what string) error {
	h.attempts++
	if h.beforeWrite != nil {
		return h.beforeWrite(what)
	}
	return nil
}

func (h *hookCatalog) Register(node string, svc *Service, cs []Check, token string) error {
	what := "register node"
	if svc != nil {
		what = "register " + svc.ID
	}
	if err := h.hook(what); err != nil {
		return err
	}
	return h.MemCatalog.Register(node, svc, cs, token)
}

func (h *hookCatalog) DeregisterService(node, id string) error {
	if err := h.hook("deregister service " + id); err != nil {
		return err
	}
	return h.MemCatalog.DeregisterService(node, id)
}

func (h *hookCatalog) DeregisterCheck(node, id string) error {
	if err := h.hook("deregister check " + id); err != nil {
		return err
	}
	return h.MemCatalog.DeregisterCheck(node, id)
}

func newSynced(cat Catalog) (*State, *Syncer) {
	st := newState(node, 0, zero)
	return st, newSyncer(st, cat, SyncConfig{Stagger: zero})
}

func svcCheck(id, svc, status string) Check {
	return Check{CheckID: id, Name: id, ServiceID: svc, ServiceName: svc, Status: status, Type: "ttl"}
}

func mustSync(t *testing.T, s *Syncer) {
	t.Helper()
	if err := s.SyncChanges(); err != nil {
		t.Fatal(err)
	}
}

// TestSameComparesEveryField: an entry differing from the catalog's in any
// one field is out of sync.
func TestSameComparesEveryField(t *testing.T) {
	base := Service{ID: "a", Service: "s", Tags: []string{"t"}, Address: "h", Port: 1,
		Meta: map[string]string{"k": "v"}, EnableTagOverride: true, Weights: Weights{1, 1}}
	for name, mod := range map[string]func(*Service){
		"ID": func(s *Service) { s.ID = "b" }, "Service": func(s *Service) { s.Service = "x" },
		"Tags": func(s *Service) { s.Tags = nil }, "Address": func(s *Service) { s.Address = "x" },
		"Port": func(s *Service) { s.Port = 2 }, "Meta": func(s *Service) { s.Meta = nil },
		"EnableTagOverride": func(s *Service) { s.EnableTagOverride = false },
		"Weights":           func(s *Service) { s.Weights.Warning = 0 },
	} {
		o := base.clone()
		mod(&o)
		if base.same(o) {
			t.Errorf("services differing in %s compare the same", name)
		}
	}
	if !base.same(base.clone()) {
		t.Error("a service differs from its copy")
	}
	cb := Check{CheckID: "c", Name: "n", Status: "passing", Notes: "no", Output: "o", ServiceID: "s",
		ServiceName: "sn", ServiceTags: []string{"t"}, Type: "ttl", Interval: "1s", Timeout: "2s", Node: "n1"}
	for name, mod := range map[string]func(*Check){
		"CheckID": func(c *Check) { c.CheckID = "x" }, "Name": func(c *Check) { c.Name = "x" },
		"Status": func(c *Check) { c.Status = "x" }, "Notes": func(c *Check) { c.Notes = "x" },
		"Output": func(c *Check) { c.Output = "x" }, "ServiceID": func(c *Check) { c.ServiceID = "x" },
		"ServiceName": func(c *Check) { c.ServiceName = "x" }, "ServiceTags": func(c *Check) { c.ServiceTags = nil },
		"Type": func(c *Check) { c.Type = "x" }, "Interval": func(c *Check) { c.Interval = "x" },
		"Timeout": func(c *Check) { c.Timeout = "x" },
	} {
		o := cb.clone()
		mod(&o)
		if cb.same(o) {
			t.Errorf("checks differing in %s compare the same", name)
		}
	}
	other := cb.clone()
	other.Node = "elsewhere"
	if !cb.same(other) {
		t.Error("Node took part in the comparison; it is the catalog's")
	}
}

// TestServiceDeletionIsOneWrite: deleting a service with two checks is one
// call; its checks are not deleted one by one.
func TestServiceDeletionIsOneWrite(t *testing.T) {
	cat := newHook()
	st, s := newSynced(cat)
	st.addService(Service{ID: "w", Service: "w"}, regToken{})
	st.addService(Service{ID: "v", Service: "v"}, regToken{})
	st.addCheck(svcCheck("c1", "w", checks.Passing), 0, regToken{})
	st.addCheck(svcCheck("c2", "w", checks.Passing), 0, regToken{})
	st.addCheck(svcCheck("c3", "v", checks.Passing), 0, regToken{})
	mustSync(t, s)
	cat.attempts = 0
	st.removeService("w")
	mustSync(t, s)
	if cat.attempts != 1 {
		t.Fatalf("deleting a service with two checks took %d calls", cat.attempts)
	}
	if got := cat.Dump(node); got != "check c3 svc=v passing \"\"\nservice v v tags=[] :0" {
		t.Fatalf("catalog:\n%s", got)
	}
	if _, ok := st.Check("c3"); !ok {
		t.Fatal("removing one service removed another's check")
	}
}

// TestEveryChangedServiceIsWritten: services in sync do not stop the
// planning of those after them.
func TestEveryChangedServiceIsWritten(t *testing.T) {
	cat := NewMemCatalog()
	st, s := newSynced(cat)
	st.addService(Service{ID: "a", Service: "a"}, regToken{})
	st.addService(Service{ID: "b", Service: "b"}, regToken{})
	st.addCheck(Check{CheckID: "n1", Status: checks.Passing}, 0, regToken{})
	st.addCheck(Check{CheckID: "n2", Status: checks.Passing}, 0, regToken{})
	mustSync(t, s)
	st.addService(Service{ID: "b", Service: "b", Port: 9}, regToken{})
	st.updateCheck("n2", checks.Critical, "")
	mustSync(t, s)
	if got := cat.Dump(node); !strings.Contains(got, "service b b tags=[] :9") || !strings.Contains(got, `check n2 svc= critical`) {
		t.Fatalf("catalog:\n%s", got)
	}
}

// TestCheckWriteCarriesItsService: a check whose service the catalog lost
// is written together with the service, so the write succeeds and repairs
// the service.
func TestCheckWriteCarriesItsService(t *testing.T) {
	cat := NewMemCatalog()
	st, s := newSynced(cat)
	st.addService(Service{ID: "w", Service: "w"}, regToken{})
	st.addCheck(svcCheck("c", "w", checks.Passing), 0, regToken{})
	mustSync(t, s)
	cat.drop(node, "w", "")
	st.updateCheck("c", checks.Critical, "down")
	mustSync(t, s)
	if got := cat.Dump(node); got != "check c svc=w critical \"down\"\nservice w w tags=[] :0" {
		t.Fatalf("catalog:\n%s", got)
	}
}

// TestOneFailedWriteDoesNotStopTheOthers, and the failed entry stays out of
// sync for the next sync, with the write named in the error.
func TestOneFailedWriteDoesNotStopTheOthers(t *testing.T) {
	cat := newHook()
	st, s := newSynced(cat)
	cat.beforeWrite = func(what string) error {
		if what == "register a" {
			return errors.New("refused")
		}
		return nil
	}
	st.addService(Service{ID: "a", Service: "a"}, regToken{})
	st.addService(Service{ID: "b", Service: "b"}, regToken{})
	err := s.SyncChanges()
	if err == nil || !strings.Contains(err.Error(), "sync register service a: refused") {
		t.Fatalf("error %v", err)
	}
	if got := cat.Dump(node); got != "service b b tags=[] :0" {
		t.Fatalf("catalog:\n%s", got)
	}
	cat.beforeWrite = nil
	mustSync(t, s)
	if got := cat.Dump(node); !strings.Contains(got, "service a a") {
		t.Fatalf("the failed write was not retried:\n%s", got)
	}
}

// TestChangeDuringWriteStaysOutOfSync: a change made while the write of
// the previous version is in flight is written by the next sync.
func TestChangeDuringWriteStaysOutOfSync(t *testing.T) {
	cat := newHook()
	st, s := newSynced(cat)
	st.addCheck(Check{CheckID: "c", Status: checks.Passing}, 0, regToken{})
	cat.beforeWrite = func(string) error {
		cat.beforeWrite = nil
		st.updateCheck("c", checks.Critical, "")
		return nil
	}
	mustSync(t, s)
	mustSync(t, s)
	if got := cat.Dump(node); got != `check c svc= critical ""` {
		t.Fatalf("catalog:\n%s", got)
	}

	st.addService(Service{ID: "w", Service: "w"}, regToken{})
	cat.beforeWrite = func(string) error {
		cat.beforeWrite = nil
		st.addService(Service{ID: "w", Service: "w", Port: 7}, regToken{})
		return nil
	}
	mustSync(t, s)
	mustSync(t, s)
	if got := cat.Dump(node); !strings.Contains(got, "service w w tags=[] :7") {
		t.Fatalf("catalog:\n%s", got)
	}
}

// TestReaddedDuringDeletionSurvives: an entry registered again while its
// deletion is in flight is not forgotten when the deletion completes.
func TestReaddedDuringDeletionSurvives(t *testing.T) {
	cat := newHook()
	st, s := newSynced(cat)
	st.addService(Service{ID: "w", Service: "w"}, regToken{})
	st.addCheck(Check{CheckID: "c", Status: checks.Passing}, 0, regToken{})
	mustSync(t, s)
	st.removeService("w")
	st.removeCheck("c")
	cat.beforeWrite = func(what string) error {
		switch what {
		case "deregister service w":
			st.addService(Service{ID: "w", Service: "w", Port: 1}, regToken{})
		case "deregister check c":
			st.addCheck(Check{CheckID: "c", Status: checks.Warning}, 0, regToken{})
		}
		return nil
	}
	mustSync(t, s)
	cat.beforeWrite = nil
	mustSync(t, s)
	if got := cat.Dump(node); got != "check c svc= warning \"\"\nservice w w tags=[] :1" {
		t.Fatalf("catalog:\n%s", got)
	}
}

// TestDeletingWhatTheCatalogLostIsDone: a deregistration answered "not
// found" counts as done, with no error and nothing left to retry.
func TestDeletingWhatTheCatalogLostIsDone(t *testing.T) {
	cat := newHook()
	st, s := newSynced(cat)
	st.addService(Service{ID: "w", Service: "w"}, regToken{})
	st.addCheck(Check{CheckID: "c", Status: checks.Passing}, 0, regToken{})
	mustSync(t, s)
	cat.drop(node, "w", "c")
	st.removeService("w")
	st.removeCheck("c")
	mustSync(t, s)
	cat.attempts = 0
	mustSync(t, s)
	if cat.attempts != 0 {
		t.Fatalf("%d writes retried after a not-found deletion", cat.attempts)
	}
}

// TestFullSyncWithPendingDeletions: deletions that failed are finished by a
// full sync, or forgotten when the catalog no longer has them.
func TestFullSyncWithPendingDeletions(t *testing.T) {
	cat := newHook()
	st, s := newSynced(cat)
	for _, id := range []string{"gone", "kept"} {
		st.addService(Service{ID: id, Service: id}, regToken{})
		st.addCheck(Check{CheckID: id, Status: checks.Passing}, 0, regToken{})
	}
	mustSync(t, s)
	cat.fail(errors.New("down"))
	for _, id := range []string{"gone", "kept"} {
		st.removeService(id)
		st.removeCheck(id)
	}
	if s.SyncChanges() == nil {
		t.Fatal("sync against a failing catalog succeeded")
	}
	cat.fail(nil)
	cat.drop(node, "gone", "gone")
	cat.attempts = 0
	if err := s.syncFull(); err != nil {
		t.Fatal(err)
	}
	if got := cat.Dump(node); got != "" {
		t.Fatalf("catalog:\n%s", got)
	}
	if cat.attempts != 2 {
		t.Fatalf("%d writes; want the two deletions still in the catalog", cat.attempts)
	}
}

// TestFullSyncNoticesChangedChecks: a check whose catalog copy differs (a
// status written behind the agent's back) is rewritten.
func TestFullSyncNoticesChangedChecks(t *testing.T) {
	cat := NewMemCatalog()
	st, s := newSynced(cat)
	st.addCheck(Check{CheckID: "c", Status: checks.Passing}, 0, regToken{})
	mustSync(t, s)
	cat.put(node, nil, &Check{CheckID: "c", Status: checks.Critical})
	if err := s.syncFull(); err != nil {
		t.Fatal(err)
	}
	if got := cat.Dump(node); got != `check c svc= passing ""` {
		t.Fatalf("catalog:\n%s", got)
	}
}

func TestStateRemovalAndLateReports(t *testing.T) {
	st := newState(node, -1, zero)
	if st.removeService("ghost") || st.removeCheck("ghost") {
		t.Fatal("removed something that was never there")
	}
	st.updateCheck("ghost", checks.Passing, "") // a runner's late report: ignored
	st.addService(Service{ID: "w", Service: "w"}, regToken{})
	st.addCheck(svcCheck("c", "w", checks.Critical), time.Minute, regToken{})
	if !st.removeService("w") || st.removeService("w") {
		t.Fatal("removeService twice: want true then false")
	}
	if st.removeCheck("c") {
		t.Fatal("the service's check outlived the service")
	}
	st.updateCheck("c", checks.Critical, "late")
	if _, ok := st.Check("c"); ok {
		t.Fatal("a late report brought a deleted check back")
	}
	if got := st.criticalServices(time.Now().Add(time.Hour)); len(got) != 0 {
		t.Fatalf("a deleted service is reported critical: %v", got)
	}
}

// TestCriticalServicesLooksAtEveryCheck: checks without the setting, or
// not critical, do not hide the ones that qualify.
func TestCriticalServicesLooksAtEveryCheck(t *testing.T) {
	st := newState(node, 0, zero)
	st.addService(Service{ID: "s", Service: "s"}, regToken{})
	st.addService(Service{ID: "t", Service: "t"}, regToken{})
	st.addCheck(Check{CheckID: "a-node", Status: checks.Critical}, time.Minute, regToken{})
	st.addCheck(svcCheck("b-plain", "s", checks.Critical), 0, regToken{})
	st.addCheck(svcCheck("c-fine", "s", checks.Passing), time.Minute, regToken{})
	st.addCheck(svcCheck("d-doomed", "s", checks.Critical), time.Minute, regToken{})
	st.addCheck(svcCheck("e-doomed-too", "s", checks.Critical), time.Minute, regToken{})
	st.addCheck(svcCheck("f-other", "t", checks.Critical), time.Minute, regToken{})
	if got := st.criticalServices(time.Now().Add(time.Minute)); !cmp.Equal(got, []string{"s", "t"}) {
		t.Fatalf("critical services %v, want [s t] once each", got)
	}
}

// TestFullSyncPastPendingDeletions: a deletion still pending does not stop
// the full sync from checking the entries after it.
func TestFullSyncPastPendingDeletions(t *testing.T) {
	cat := NewMemCatalog()
	st, s := newSynced(cat)
	st.addService(Service{ID: "a", Service: "a"}, regToken{})
	st.addService(Service{ID: "b", Service: "b"}, regToken{})
	st.addCheck(Check{CheckID: "a", Status: checks.Passing}, 0, regToken{})
	st.addCheck(Check{CheckID: "b", Status: checks.Passing}, 0, regToken{})
	mustSync(t, s)
	cat.fail(errors.New("down"))
	st.removeService("a")
	st.removeCheck("a")
	_ = s.SyncChanges()
	cat.fail(nil)
	cat.put(node, &Service{ID: "b", Service: "drifted"}, &Check{CheckID: "b", Status: checks.Critical})
	if err := s.syncFull(); err != nil {
		t.Fatal(err)
	}
	if got := cat.Dump(node); got != "check b svc= passing \"\"\nservice b b tags=[] :0" {
		t.Fatalf("catalog:\n%s", got)
	}
}

func TestReregistrationKeepsCriticalSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newState(node, 0, zero)
		st.addService(Service{ID: "s", Service: "s"}, regToken{})
		st.addCheck(svcCheck("c", "s", checks.Critical), time.Minute, regToken{})
		time.Sleep(50 * time.Second)
		st.addCheck(svcCheck("c", "s", checks.Critical), time.Minute, regToken{})
		time.Sleep(10 * time.Second)
		if got := st.criticalServices(time.Now()); !cmp.Equal(got, []string{"s"}) {
			t.Fatalf("re-registration restarted the critical clock: %v", got)
		}
	})
}

// TestDeferralFollowsTheConfiguredInterval: with check_update_interval 1m
// and the random part at its middle, output waits 30s + 30s.
func TestDeferralFollowsTheConfiguredInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newState(node, time.Minute, func(d time.Duration) time.Duration { return d / 2 })
		cat := NewMemCatalog()
		s := newSyncer(st, cat, SyncConfig{Stagger: zero})
		st.addCheck(Check{CheckID: "c", Status: checks.Passing}, 0, regToken{})
		mustSync(t, s)
		st.updateCheck("c", checks.Passing, "new")
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		mustSync(t, s)
		if strings.Contains(cat.Dump(node), "new") {
			t.Fatal("output written before 30s + 30s")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		mustSync(t, s)
		if !strings.Contains(cat.Dump(node), `"new"`) {
			t.Fatalf("output not written after the deferral:\n%s", cat.Dump(node))
		}
	})
}

func TestMemCatalog(t *testing.T) {
	m := NewMemCatalog()
	if err := m.Register(node, nil, []Check{{CheckID: "a"}, {CheckID: "c", ServiceID: "w"}}, ""); err == nil {
		t.Fatal("a check of an unknown service was accepted")
	}
	if err := m.Register(node, &Service{ID: "w"}, []Check{{CheckID: "c", ServiceID: "w"}, {CheckID: "n"}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(node, &Service{ID: "v"}, []Check{{CheckID: "d", ServiceID: "v"}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(node, nil, []Check{{CheckID: "c2", ServiceID: "w"}}, ""); err != nil {
		t.Fatalf("a check of a known service: %v", err)
	}
	svcs, _ := m.NodeServices(node)
	chks, _ := m.NodeChecks(node)
	if len(svcs) != 2 || svcs[0].ID != "v" || len(chks) != 4 || chks[0].CheckID != "c" || chks[3].CheckID != "n" {
		t.Fatalf("reads not sorted: %v %v", svcs, chks)
	}
	m.drop(node, "w", "")
	if got := m.Dump(node); got != "check d svc=v  \"\"\ncheck n svc=  \"\"\nservice v  tags=[] :0" {
		t.Fatalf("after dropping w:\n%s", got)
	}
	if err := m.DeregisterCheck(node, "zz"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown check: %v", err)
	}
	if err := m.DeregisterService(node, "zz"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown service: %v", err)
	}
}

// TestHaltWaitsForTheSyncUnderWayAndEndsSyncing: Halt returns only after a
// write under way has been answered, and then no sync writes anything,
// whatever changed meanwhile.
func TestHaltWaitsForTheSyncUnderWayAndEndsSyncing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cat := newHook()
		st, s := newSynced(cat)
		st.addService(Service{ID: "w", Service: "w"}, regToken{})
		release := make(chan struct{})
		cat.beforeWrite = func(string) error {
			<-release // a catalog write in flight
			return nil
		}
		synced := make(chan error, 1)
		go func() { synced <- s.SyncChanges() }()
		synctest.Wait()
		halted := make(chan struct{})
		go func() {
			s.Halt()
			close(halted)
		}()
		synctest.Wait()
		select {
		case <-halted:
			t.Fatal("Halt returned while a write was in flight")
		default:
		}
		close(release)
		<-halted
		if err := <-synced; err != nil {
			t.Fatalf("sync under way: %v", err)
		}
		attempts := cat.attempts
		st.addService(Service{ID: "after", Service: "after"}, regToken{})
		for name, sync := range map[string]func() error{"SyncChanges": s.SyncChanges, "syncFull": s.syncFull} {
			if err := sync(); !errors.Is(err, ErrHalted) {
				t.Errorf("%s after Halt: %v, want ErrHalted", name, err)
			}
		}
		if cat.attempts != attempts || strings.Contains(cat.Dump(node), "after") {
			t.Errorf("a halted syncer wrote: %d attempts, catalog:\n%s", cat.attempts-attempts, cat.Dump(node))
		}
	})
}
