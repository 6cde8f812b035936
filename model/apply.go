package model

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Apply applies cmd at index, which must exceed every index applied before
// (raft log indexes do). A rejected command returns Result.Err and leaves the
// state exactly as it was; so does an aborted transaction.
func (s *State) Apply(index uint64, cmd Command) Result {
	res := Result{Index: index}
	if _, err := cmd.Kind(); err != nil {
		res.Err = errorf(ErrInvalid, "invalid command: %v", err)
		return res
	}
	if index <= s.Index() {
		res.Err = errorf(ErrInternal, "index %d does not advance past %d", index, s.Index())
		return res
	}
	a := &applier{s: s, idx: index, res: &res}
	// Node names compare ignoring case (S62): a command naming a node the
	// catalog has under another case means that node. The copies keep the
	// caller's command as it was.
	switch {
	case cmd.Register != nil:
		r := *cmd.Register
		r.Node = s.nodeKey(r.Node)
		a.register(r, cmd.Register.Node)
	case cmd.Deregister != nil:
		d := *cmd.Deregister
		d.Node = s.nodeKey(d.Node)
		a.deregister(d)
	case cmd.CreateSession != nil:
		c := *cmd.CreateSession
		c.Node = s.nodeKey(c.Node)
		a.createSession(c)
	case cmd.DestroySession != nil:
		a.destroySession(*cmd.DestroySession)
	case cmd.KV != nil:
		a.kv(*cmd.KV)
	case cmd.Txn != nil:
		a.txn(*cmd.Txn)
	case cmd.Reap != nil:
		a.reap(*cmd.Reap)
	case cmd.Query != nil:
		a.query(*cmd.Query)
	case cmd.ACL != nil:
		a.aclOp(*cmd.ACL)
	case cmd.Coordinates != nil:
		a.coordinateBatch(*cmd.Coordinates)
	}
	if !res.Failed() {
		res.OK = res.OK || !a.boolAnswer
		for k := range a.touched {
			res.KeysChanged = append(res.KeysChanged, k)
		}
		slices.Sort(res.KeysChanged)
	}
	slices.Sort(res.Invalidated)
	slices.Sort(res.QueriesDeleted)
	slices.SortFunc(res.LockDelays, func(x, y LockDelay) int { return strings.Compare(x.Key, y.Key) })
	return res
}

// applier carries one Apply call's index and result. Every write goes
// through it so that the table indexes move exactly when something changes.
type applier struct {
	s   *State
	idx uint64
	res *Result
	// boolAnswer is set by verbs whose answer is a boolean (cas, lock, …):
	// then res.OK is theirs to set, not implied by success.
	boolAnswer bool
	// undo, when non-nil, records pre-images so that a failed txn can roll back.
	undo *undoLog
	// touched collects the keys written or deleted, for Result.KeysChanged.
	touched map[string]struct{}
}

func (a *applier) touch(key string) {
	if a.touched == nil {
		a.touched = map[string]struct{}{}
	}
	a.touched[key] = struct{}{}
}

func (a *applier) fail(err *Error) { a.res.Err = err }

// register applies r, whose Node is the catalog's key for the node; asked
// is the name as the command gave it, which refusals quote.
func (a *applier) register(r Register, asked string) {
	if err := a.validateRegister(&r); err != nil {
		a.fail(err)
		return
	}
	if err := a.putNode(r, asked); err != nil {
		err.Msg = "failed inserting node: " + err.Msg
		a.fail(err)
		return
	}
	for _, sv := range r.Services {
		a.putService(r.Node, sv)
	}
	for _, c := range r.Checks {
		a.putCheck(r.Node, c)
	}
}

// putCheck upserts one check of node, whose service (if any) exists; a
// write that changes nothing keeps its indexes and invalidates nothing
// (no session can be bound to a check that is already critical, S6). A
// change to critical invalidates the sessions bound to the check first, as
// Consul does (S12).
func (a *applier) putCheck(node string, c CheckSpec) {
	s := a.s
	key := CheckKey{Node: node, CheckID: c.CheckID}
	prev, had := s.checks[key]
	check := Check{Node: node, CheckID: c.CheckID, Name: c.Name, Status: c.Status,
		Notes: c.Notes, Output: c.Output, ServiceID: c.ServiceID, Type: c.Type, Definition: c.Definition,
		CreateIndex: a.idx, ModifyIndex: a.idx}
	if c.ServiceID != "" {
		check.ServiceName = s.services[ServiceKey{Node: node, ServiceID: c.ServiceID}].Service
	}
	if had {
		check.CreateIndex, check.ModifyIndex = prev.CreateIndex, prev.ModifyIndex
		if check == prev {
			return
		}
		check.ModifyIndex = a.idx
	}
	if c.Status == HealthCritical {
		a.invalidateBoundTo(key)
	}
	s.checks[key] = check
	s.tables.Checks = a.idx
}

// validateRegister refuses a register before anything is written, so that
// one bad service or check changes nothing (S55). It fills in defaulted
// service IDs.
func (a *applier) validateRegister(r *Register) *Error {
	if r.Node == "" {
		return errorf(ErrInvalid, "Must provide node")
	}
	services := map[string]bool{}
	for i := range r.Services {
		sv := &r.Services[i]
		if sv.ID == "" {
			sv.ID = sv.Service
		}
		switch {
		case sv.ID == "": // no name either: the ID defaults to the name
			return errorf(ErrInvalid, "Must provide service name")
		case sv.Service == "":
			return errorf(ErrInvalid, "Must provide service name (Service.Service) when service ID is provided")
		case services[sv.ID]:
			return errorf(ErrInvalid, "Duplicate service '%s'", sv.ID)
		}
		services[sv.ID] = true
	}
	seen := map[string]bool{}
	for _, c := range r.Checks {
		switch {
		case c.CheckID == "":
			return errorf(ErrInvalid, "Must provide check ID")
		case !c.Status.Valid():
			return errorf(ErrInvalid, "Invalid check status '%s'", c.Status)
		case seen[c.CheckID]:
			return errorf(ErrInvalid, "Duplicate check '%s'", c.CheckID)
		}
		seen[c.CheckID] = true
		if c.ServiceID == "" || services[c.ServiceID] {
			continue
		}
		if _, ok := a.s.services[ServiceKey{Node: r.Node, ServiceID: c.ServiceID}]; !ok {
			return errorf(ErrMissing, "Unknown service ID '%s' for check ID '%s'", c.ServiceID, c.CheckID)
		}
	}
	return nil
}

// putService upserts one service; a write that changes nothing keeps its
// indexes (S37's rule, applied to the catalog). A renamed service renames
// its checks' ServiceName with it.
func (a *applier) putService(node string, sv ServiceSpec) {
	key := ServiceKey{Node: node, ServiceID: sv.ID}
	prev, had := a.s.services[key]
	next := Service{Node: node, ServiceID: sv.ID, Service: sv.Service, Tags: slices.Clone(sv.Tags),
		Address: sv.Address, Port: sv.Port, Meta: maps.Clone(sv.Meta), ServiceDetails: sv.ServiceDetails.Clone(),
		CreateIndex: a.idx, ModifyIndex: a.idx}
	if had {
		next.CreateIndex, next.ModifyIndex = prev.CreateIndex, prev.ModifyIndex
		if serviceEqual(prev, next) {
			return
		}
		next.ModifyIndex = a.idx
	}
	a.s.services[key] = next
	a.s.tables.Services = a.idx
	if had && prev.Service != next.Service {
		for _, c := range a.s.CheckList(node, "") {
			if c.ServiceID == sv.ID {
				c.ServiceName, c.ModifyIndex = next.Service, a.idx
				a.s.checks[CheckKey{Node: node, CheckID: c.CheckID}] = c
				a.s.tables.Checks = a.idx
			}
		}
	}
}

func (a *applier) deregister(d Deregister) {
	if d.Node == "" {
		a.fail(errorf(ErrInvalid, "Must provide node"))
		return
	}
	s := a.s
	if _, ok := s.nodes[d.Node]; !ok {
		return // Consul treats deregistering a missing node as done.
	}
	switch {
	case d.ServiceID != "":
		a.deleteService(ServiceKey{Node: d.Node, ServiceID: d.ServiceID})
		return
	case d.CheckID != "":
		a.deleteCheck(CheckKey{Node: d.Node, CheckID: d.CheckID})
		return
	}
	a.deleteNode(d.Node)
}

// deleteNode removes a node with its services and checks, then invalidates
// every session on it (S10, S55).
func (a *applier) deleteNode(name string) {
	s := a.s
	for _, sv := range s.ServiceList(name) {
		a.deleteService(ServiceKey{Node: sv.Node, ServiceID: sv.ServiceID})
	}
	for _, c := range s.CheckList(name, "") {
		a.deleteCheck(CheckKey{Node: c.Node, CheckID: c.CheckID})
	}
	a.deleteCoordinates(name)
	s.indexNodeID(s.nodes[name], true)
	delete(s.nodes, name)
	s.unfoldNode(name)
	s.tables.Nodes = a.idx
	for _, se := range s.SessionList(name) {
		a.invalidate(se.ID)
	}
}

// deleteService removes a service and every check of it, each check
// invalidating its bound sessions as a check deregistration does (S55).
// An unknown service is a no-op, as in Consul.
func (a *applier) deleteService(key ServiceKey) {
	if _, ok := a.s.services[key]; !ok {
		return
	}
	for _, c := range a.s.CheckList(key.Node, "") {
		if c.ServiceID == key.ServiceID {
			a.deleteCheck(CheckKey{Node: c.Node, CheckID: c.CheckID})
		}
	}
	delete(a.s.services, key)
	a.s.tables.Services = a.idx
}

func (a *applier) deleteCheck(key CheckKey) {
	if _, ok := a.s.checks[key]; !ok {
		return
	}
	delete(a.s.checks, key)
	a.s.tables.Checks = a.idx
	a.invalidateBoundTo(key)
}

// invalidateBoundTo invalidates every session bound to the check, through
// any of its three check lists (S11, S12, S56).
func (a *applier) invalidateBoundTo(key CheckKey) {
	for _, se := range a.s.SessionList(key.Node) {
		if slices.Contains(se.CheckIDs(), key.CheckID) {
			a.invalidate(se.ID)
		}
	}
}

func (a *applier) createSession(c CreateSession) {
	if err := a.validateSession(c); err != nil {
		a.fail(err)
		return
	}
	behavior := c.Behavior
	if behavior == "" {
		behavior = BehaviorRelease
	}
	a.s.sessions[c.ID] = Session{
		ID: c.ID, Name: c.Name, Node: c.Node, Checks: slices.Clone(c.Checks),
		NodeChecks: slices.Clone(c.NodeChecks), ServiceChecks: slices.Clone(c.ServiceChecks),
		LockDelay: c.LockDelay, Behavior: behavior, TTL: c.TTL,
		CreateIndex: a.idx, ModifyIndex: a.idx,
	}
	a.s.tables.Sessions = a.idx
	a.res.SessionID = c.ID
}

// validateSession applies S3, S4 and S6 in Consul's order: request fields
// first, then the catalog. Every bound check, whichever list names it, is
// checked by ID on the session's node (S56).
func (a *applier) validateSession(c CreateSession) *Error {
	switch {
	case c.ID == "":
		return errorf(ErrInvalid, "Must provide ID")
	case c.Node == "":
		return errorf(ErrInvalid, "Must provide Node")
	case c.Behavior != "" && c.Behavior != BehaviorRelease && c.Behavior != BehaviorDelete:
		return errorf(ErrInvalid, "Invalid Behavior setting '%s'", c.Behavior)
	}
	if err := ValidateTTL(c.TTL); err != nil {
		return err
	}
	if _, dup := a.s.sessions[c.ID]; dup {
		return errorf(ErrInternal, "Session ID '%s' already exists", c.ID)
	}
	if _, ok := a.s.nodes[c.Node]; !ok {
		return errorf(ErrMissing, "Missing node registration")
	}
	for _, id := range checkUnion(c.Checks, c.NodeChecks, c.ServiceChecks) {
		check, ok := a.s.checks[CheckKey{Node: c.Node, CheckID: id}]
		if !ok {
			return errorf(ErrMissing, "Missing check '%s' registration", id)
		}
		if check.Status == HealthCritical {
			return errorf(ErrConflict, "Check '%s' is in critical state", id)
		}
	}
	return nil
}

// ValidateTTL checks a session TTL as submitted: "" or zero means none,
// otherwise it must parse and lie within [MinSessionTTL, MaxSessionTTL] (S3).
func ValidateTTL(ttl string) *Error {
	if ttl == "" {
		return nil
	}
	d, err := time.ParseDuration(ttl)
	if err != nil {
		return errorf(ErrInvalid, "Session TTL '%s' invalid: %v", ttl, err)
	}
	if d != 0 && (d < MinSessionTTL || d > MaxSessionTTL) {
		return errorf(ErrInvalid, "Invalid Session TTL '%d', must be between [%v=%v]", d, MinSessionTTL, MaxSessionTTL)
	}
	return nil
}

func (a *applier) destroySession(d DestroySession) {
	if d.ID == "" {
		a.fail(errorf(ErrInvalid, "Must provide ID"))
		return
	}
	a.invalidate(d.ID) // unknown IDs are a successful no-op (S13)
}

// invalidate removes a session and releases or deletes every key it holds, at
// the applier's index, and reports the lock-delays to arm (S15-S17, S22).
func (a *applier) invalidate(id string) {
	se, ok := a.s.sessions[id]
	if !ok {
		return
	}
	delete(a.s.sessions, id)
	a.s.tables.Sessions = a.idx
	a.res.Invalidated = append(a.res.Invalidated, id)
	// Queries bound to the session go in the same entry (S58).
	for _, q := range a.s.QueryList() {
		if q.Session == id {
			delete(a.s.queries, q.ID)
			a.s.tables.Queries = a.idx
			a.res.QueriesDeleted = append(a.res.QueriesDeleted, q.ID)
		}
	}
	delay := se.EffectiveLockDelay()
	for _, key := range a.s.HeldBy(id) {
		if se.Behavior == BehaviorDelete {
			a.deleteKey(key)
		} else {
			e := a.s.kv[key]
			e.Session = ""
			a.putEntry(e)
		}
		if delay > 0 {
			a.res.LockDelays = append(a.res.LockDelays, LockDelay{Key: key, Delay: delay})
			a.setDelayedAt(key)
		}
	}
}
