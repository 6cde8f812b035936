package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Consul's anti-entropy timings (not user-settable there either).
const (
	defaultSyncInterval    = time.Minute      // ae_interval: full sync period, before scaling
	defaultRetryInterval   = 15 * time.Second // after a failed sync
	defaultServerUpStagger = 3 * time.Second  // spread of full syncs after a new leader
)

// The entries full syncs leave alone: the leader owns them.
const (
	consulServiceID = "consul"
	serfHealthID    = "serfHealth"
)

// SyncConfig tunes a Syncer; zero values take the defaults above.
type SyncConfig struct {
	Interval      time.Duration
	RetryInterval time.Duration
	// ClusterSize is the number of LAN members (failed and left included),
	// which stretches the full-sync period on big clusters; nil means 1.
	ClusterSize func() int
	// Stagger draws a random duration in [0, d); nil means uniform.
	Stagger func(d time.Duration) time.Duration
	// OnError hears about failed syncs (for the agent's log); may be nil.
	OnError func(error)
	// OnDenied hears about writes the catalog refused for the token they
	// carried (for the agent's log, as Consul's "blocked by ACLs"); such a
	// write counts as done until the next full sync. May be nil.
	OnDenied func(what string, err error)
	// NodeInfo, when set and the Catalog is a NodeCatalog, is the node's
	// own record: written by the first sync and again by the first sync
	// after a full sync finds the catalog's differs (someone rewrote it).
	NodeInfo *NodeInfo
	// RegisterToken is the token a service or check registration is
	// written with, given the token the entry keeps ("" for none) and
	// whether the agent's configuration or the agent itself defined it;
	// read at each sync, so a token set meanwhile counts. Nil writes with
	// the entry's own.
	RegisterToken func(own string, local bool) string
}

// Syncer is anti-entropy: it makes the catalog's copy of the node's services
// and checks match the State, and its node record match NodeInfo. Partial
// syncs write what changed; periodic full syncs also read the catalog and
// repair anything that drifted.
type Syncer struct {
	st  *State
	cat Catalog
	cfg SyncConfig

	// syncing holds one token while a sync runs, so syncs go one at a time.
	// A channel, not a sync.Mutex: a sync holds it across a catalog request,
	// and a goroutine parked on a Mutex does not count as blocked for
	// testing/synctest, so the simulator's virtual clock would stop.
	syncing  chan struct{} // capacity 1
	serverUp chan struct{} // capacity 1

	// nodeCat and node are set when the node's record is synced; nodeInSync
	// is touched only while holding syncing.
	nodeCat    NodeCatalog
	node       *NodeInfo
	nodeInSync bool
	// halted is set by Halt, touched only while holding syncing.
	halted bool
}

// pause holds the sync token until resume, so that no sync runs in
// between: a registration that changes a service and its checks one after
// the other reaches the catalog whole, in one write, as Consul's agent
// pauses its syncer around a service registration. It waits for a sync
// under way to finish.
func (s *Syncer) pause()  { s.syncing <- struct{}{} }
func (s *Syncer) resume() { <-s.syncing }

// ErrHalted is what a sync returns once the Syncer is halted.
var ErrHalted = errors.New("anti-entropy halted: the agent has left")

// Halt stops syncing for good: it waits for a sync under way to finish, and
// every later one writes nothing and returns ErrHalted. An agent halts
// before it leaves its gossip pool, since the leader deregisters a node the
// moment its leave arrives and a write after that would put the node back
// without the serfHealth check that lets a reconcile remove it.
func (s *Syncer) Halt() {
	s.syncing <- struct{}{}
	s.halted = true
	<-s.syncing
}

// newSyncer returns a Syncer of st against cat.
func newSyncer(st *State, cat Catalog, cfg SyncConfig) *Syncer {
	if cfg.Interval <= 0 {
		cfg.Interval = defaultSyncInterval
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = defaultRetryInterval
	}
	if cfg.ClusterSize == nil {
		cfg.ClusterSize = func() int { return 1 }
	}
	if cfg.Stagger == nil {
		cfg.Stagger = func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return rand.N(d)
		}
	}
	s := &Syncer{st: st, cat: cat, cfg: cfg, syncing: make(chan struct{}, 1), serverUp: make(chan struct{}, 1)}
	if nc, ok := cat.(NodeCatalog); ok && cfg.NodeInfo != nil {
		info := cfg.NodeInfo.clone()
		s.nodeCat, s.node = nc, &info
	}
	return s
}

// scaleFactor is how much Consul stretches sync periods with cluster size:
// 1 up to 128 members, then one more per doubling.
func scaleFactor(n int) int {
	const threshold = 128
	if n <= threshold {
		return 1
	}
	return int(math.Ceil(math.Log2(float64(n))-math.Log2(threshold))) + 1
}

func (s *Syncer) scaled(d time.Duration) time.Duration {
	return time.Duration(scaleFactor(s.cfg.ClusterSize())) * d
}

// noteServerUp asks for a full sync soon (after a random stagger), as Consul
// does when a server joins or a new leader announces itself.
func (s *Syncer) noteServerUp() {
	select {
	case s.serverUp <- struct{}{}:
	default:
	}
}

func (s *Syncer) report(err error) {
	if err != nil && s.cfg.OnError != nil {
		s.cfg.OnError(err)
	}
}

// run syncs until ctx ends: a full sync first, then a full sync every
// Interval plus a random scaled part of it (RetryInterval likewise after a
// failure), and a partial sync as soon as something goes out of sync, as
// Consul's syncer does. The loop runs its syncs one after the other, so
// changes made while one is under way merge into a single notice and a
// single partial sync after it: however fast checks change, the loop has
// at most one sync in flight and one waiting. A failed partial sync is
// tried again after RetryInterval (plus a stagger) if no other change
// comes first.
func (s *Syncer) run(ctx context.Context) {
	full := time.NewTimer(0)
	defer full.Stop()
	var retry <-chan time.Time
	for {
		switch s.next(ctx, full.C, retry) {
		case eventStop:
			return
		case eventFull:
			err := s.syncFull()
			s.report(err)
			if err != nil {
				full.Reset(s.cfg.RetryInterval + s.cfg.Stagger(s.scaled(s.cfg.RetryInterval)))
			} else {
				full.Reset(s.cfg.Interval + s.cfg.Stagger(s.scaled(s.cfg.Interval)))
			}
		case eventServerUp:
			full.Reset(s.cfg.Stagger(s.scaled(defaultServerUpStagger)))
		case eventChange:
			retry = s.partial(retry)
		case eventRetry:
			retry = s.partial(nil)
		}
	}
}

// The loop's events, in the order next takes them when several are ready.
const (
	eventStop = iota
	eventFull
	eventServerUp
	eventChange
	eventRetry
)

// next waits for the loop's next event. When several are ready at once it
// takes them in a fixed order (eventStop first): Go's select picks among
// ready cases at random, and which sync runs first decides every later
// stagger draw, so a simulated run would not replay its seed.
func (s *Syncer) next(ctx context.Context, full, retry <-chan time.Time) int {
	select {
	case <-ctx.Done():
		return eventStop
	default:
	}
	select {
	case <-full:
		return eventFull
	default:
	}
	select {
	case <-s.serverUp:
		return eventServerUp
	default:
	}
	select {
	case <-s.st.changeNotices():
		return eventChange
	default:
	}
	// Only one case is ready when a blocked select wakes: the one that
	// woke it.
	select {
	case <-ctx.Done():
		return eventStop
	case <-full:
		return eventFull
	case <-s.serverUp:
		return eventServerUp
	case <-s.st.changeNotices():
		return eventChange
	case <-retry:
		return eventRetry
	}
}

// partial runs the loop's partial sync and returns the retry to wait for:
// retry as given, or a new one after a failure when none was armed.
func (s *Syncer) partial(retry <-chan time.Time) <-chan time.Time {
	if err := s.SyncChanges(); err != nil {
		s.report(err)
		if retry == nil {
			retry = time.After(s.cfg.RetryInterval + s.cfg.Stagger(s.scaled(s.cfg.RetryInterval)))
		}
	}
	return retry
}

// syncFull reads the node's record and entries from the catalog, marks the
// record and every local entry the catalog lacks or has differently, marks
// for deletion what the catalog has and the agent does not (except the
// leader's "consul" service and "serfHealth" check), and then syncs the
// changes.
func (s *Syncer) syncFull() error {
	s.syncing <- struct{}{}
	defer func() { <-s.syncing }()
	if s.halted {
		return ErrHalted
	}
	node := s.st.node
	var rs []Service
	if s.node != nil {
		remote, found, svcs, err := s.nodeCat.NodeAndServices(node)
		if err != nil {
			return fmt.Errorf("full sync: read node and services: %w", err)
		}
		s.nodeInSync, rs = found && s.node.same(remote), svcs
	} else {
		var err error
		if rs, err = s.cat.NodeServices(node); err != nil {
			return fmt.Errorf("full sync: read services: %w", err)
		}
	}
	rc, err := s.cat.NodeChecks(node)
	if err != nil {
		return fmt.Errorf("full sync: read checks: %w", err)
	}
	remoteS := make(map[string]Service, len(rs))
	for _, r := range rs {
		remoteS[r.ID] = r
	}
	remoteC := make(map[string]Check, len(rc))
	for _, r := range rc {
		remoteC[r.CheckID] = r
	}

	st := s.st
	st.mu.Lock()
	// Sorted walks keep full syncs repeatable from run to run.
	for _, id := range slices.Sorted(maps.Keys(st.services)) {
		e := st.services[id]
		r, ok := remoteS[id]
		if e.deleted {
			if !ok {
				delete(st.services, id)
			}
			continue
		}
		e.inSync = ok && e.svc.same(r)
	}
	for id, r := range remoteS {
		if _, ok := st.services[id]; !ok && id != consulServiceID {
			st.services[id] = &serviceEntry{svc: r, deleted: true, ver: st.bump()}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(st.checks)) {
		e := st.checks[id]
		r, ok := remoteC[id]
		if e.deleted {
			if !ok {
				delete(st.checks, id)
			}
			continue
		}
		local := e.check
		if e.deferred != nil {
			// An output change is waiting out its deferral; only a
			// difference in anything else counts now.
			local.Output, r.Output = "", ""
		}
		e.inSync = ok && local.same(r)
	}
	for id, r := range remoteC {
		if _, ok := st.checks[id]; !ok && id != serfHealthID {
			st.checks[id] = &checkEntry{check: r, deleted: true, ver: st.bump()}
		}
	}
	st.mu.Unlock()
	return s.syncChangesLocked()
}

// SyncChanges writes every out-of-sync entry now: one write per service
// whose registration or checks changed (its changed checks ride along),
// one for all changed node checks, one per deletion. The HTTP layer calls
// it after a registration, as Consul's agent does, so the reply follows
// the write.
func (s *Syncer) SyncChanges() error {
	s.syncing <- struct{}{}
	defer func() { <-s.syncing }()
	if s.halted {
		return ErrHalted
	}
	return s.syncChangesLocked()
}

type opKind int

const (
	opRegister opKind = iota
	opDeregService
	opDeregCheck
)

type covered struct {
	svc   *serviceEntry
	check *checkEntry
	ver   uint64
}

type op struct {
	kind    opKind
	id      string // service or check ID for deregistrations
	token   string // what a register is written with
	svc     *Service
	checks  []Check
	entries []covered
}

func (s *Syncer) syncChangesLocked() error {
	// The node's record goes first, so that a node the catalog lacks is
	// created whole rather than bare by a service write. Services and
	// checks do not depend on it: their writes leave the node alone.
	var errs []error
	if s.node != nil && !s.nodeInSync {
		// An ACL refusal counts as done until the next full sync, as for
		// services and checks.
		err := s.nodeCat.RegisterNode(s.st.node, s.node.clone())
		s.denied("node info update", err)
		if err == nil || errors.Is(err, ErrPermissionDenied) {
			s.nodeInSync = true
		} else {
			errs = append(errs, fmt.Errorf("sync node info: %w", err))
		}
	}
	for _, o := range s.plan() {
		var err error
		switch o.kind {
		case opRegister:
			err = s.cat.Register(s.st.node, o.svc, o.checks, o.token)
		case opDeregService:
			err = s.cat.DeregisterService(s.st.node, o.id)
		case opDeregCheck:
			err = s.cat.DeregisterCheck(s.st.node, o.id)
		}
		s.denied(o.describe(), err)
		done := err == nil || errors.Is(err, ErrPermissionDenied) ||
			(o.kind != opRegister && errors.Is(err, ErrNotFound))
		if !done {
			errs = append(errs, fmt.Errorf("sync %s: %w", o.describe(), err))
			continue
		}
		s.markDone(o.entries)
	}
	return errors.Join(errs...)
}

// denied tells OnDenied of a write the catalog refused for its token.
func (s *Syncer) denied(what string, err error) {
	if errors.Is(err, ErrPermissionDenied) && s.cfg.OnDenied != nil {
		s.cfg.OnDenied(what, err)
	}
}

func (o op) describe() string {
	switch o.kind {
	case opDeregService:
		return "deregister service " + o.id
	case opDeregCheck:
		return "deregister check " + o.id
	}
	if o.svc != nil {
		return "register service " + o.svc.ID
	}
	return "register node checks"
}

// markDone marks the entries a successful write covered as in sync, unless
// they changed while it was in flight, and forgets deleted ones.
func (s *Syncer) markDone(entries []covered) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, c := range entries {
		switch {
		case c.svc != nil && c.svc.ver == c.ver:
			c.svc.inSync = true
			if c.svc.deleted && st.services[c.svc.svc.ID] == c.svc {
				delete(st.services, c.svc.svc.ID)
			}
		case c.check != nil && c.check.ver == c.ver:
			c.check.inSync = true
			stopTimer(c.check) // the write carried the latest output too
			if c.check.deleted && st.checks[c.check.check.CheckID] == c.check {
				delete(st.checks, c.check.check.CheckID)
			}
		}
	}
}

// plan turns the out-of-sync marks into writes, in a fixed order (changed
// services by ID, then services and node checks that only have changed
// checks, by check ID, then lone check deletions) so runs repeat. Each
// register carries one token: a changed check rides on its service's write
// only when both are written with the same token, as in Consul's agent, so
// it never gains the service token's rights; otherwise it goes in a write
// of its own, with its service beside it, and node checks go in one write
// per token.
func (s *Syncer) plan() []op {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()

	svcIDs := slices.Sorted(maps.Keys(st.services))
	checkIDs := slices.Sorted(maps.Keys(st.checks))

	type key struct{ sid, token string }
	registers := map[key]*op{}
	deregs := map[string]*op{}
	var order []*op
	register := func(sid, token string) *op {
		k := key{sid, token}
		if o := registers[k]; o != nil {
			return o
		}
		o := &op{kind: opRegister, token: token}
		registers[k] = o
		order = append(order, o)
		return o
	}
	deregister := func(sid string) *op {
		if o := deregs[sid]; o != nil {
			return o
		}
		o := &op{kind: opDeregService, id: sid}
		deregs[sid] = o
		order = append(order, o)
		return o
	}
	for _, id := range svcIDs {
		e := st.services[id]
		if e.inSync {
			continue
		}
		if e.deleted {
			o := deregister(id)
			o.entries = append(o.entries, covered{svc: e, ver: e.ver})
			continue
		}
		o := register(id, s.registerToken(e.token))
		svc := e.svc.clone()
		o.svc = &svc
		o.entries = append(o.entries, covered{svc: e, ver: e.ver})
	}
	var lone []op
	for _, id := range checkIDs {
		e := st.checks[id]
		if e.inSync {
			continue
		}
		sid := e.check.ServiceID
		se := st.services[sid]
		switch {
		case e.deleted && se != nil && se.deleted:
			// Deleting the service deletes its checks.
			o := deregister(sid)
			o.entries = append(o.entries, covered{check: e, ver: e.ver})
		case e.deleted:
			lone = append(lone, op{kind: opDeregCheck, id: id, entries: []covered{{check: e, ver: e.ver}}})
		case sid != "" && (se == nil || se.deleted):
			// A check whose service is gone is removed with it; nothing
			// to write on its own.
		default:
			o := register(sid, s.registerToken(e.token))
			if sid != "" && o.svc == nil {
				svc := se.svc.clone() // the catalog needs the service beside its check
				o.svc = &svc
			}
			o.checks = append(o.checks, e.check.clone())
			o.entries = append(o.entries, covered{check: e, ver: e.ver})
		}
	}
	out := make([]op, 0, len(order)+len(lone))
	for _, o := range order {
		out = append(out, *o)
	}
	return append(out, lone...)
}

// registerToken is the token an entry keeping t is written with.
func (s *Syncer) registerToken(t regToken) string {
	if s.cfg.RegisterToken == nil {
		return t.secret
	}
	return s.cfg.RegisterToken(t.secret, t.local)
}
