package model

import (
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
	switch {
	case cmd.Register != nil:
		a.register(*cmd.Register)
	case cmd.Deregister != nil:
		a.deregister(*cmd.Deregister)
	case cmd.CreateSession != nil:
		a.createSession(*cmd.CreateSession)
	case cmd.DestroySession != nil:
		a.destroySession(*cmd.DestroySession)
	case cmd.KV != nil:
		a.kv(*cmd.KV)
	case cmd.Txn != nil:
		a.txn(*cmd.Txn)
	case cmd.Reap != nil:
		a.reap(*cmd.Reap)
	}
	if !res.Failed() {
		res.OK = res.OK || !a.boolAnswer
	}
	slices.Sort(res.Invalidated)
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
}

func (a *applier) fail(err *Error) { a.res.Err = err }

func (a *applier) register(r Register) {
	if r.Node == "" {
		a.fail(errorf(ErrInvalid, "Must provide node"))
		return
	}
	seen := map[string]bool{}
	for _, c := range r.Checks {
		switch {
		case c.CheckID == "":
			a.fail(errorf(ErrInvalid, "Must provide check ID"))
			return
		case !c.Status.Valid():
			a.fail(errorf(ErrInvalid, "Invalid check status '%s'", c.Status))
			return
		case seen[c.CheckID]:
			a.fail(errorf(ErrInvalid, "Duplicate check '%s'", c.CheckID))
			return
		}
		seen[c.CheckID] = true
	}
	s := a.s
	old, exists := s.nodes[r.Node]
	if !exists || old.Address != r.Address {
		n := Node{Name: r.Node, Address: r.Address, CreateIndex: a.idx, ModifyIndex: a.idx}
		if exists {
			n.CreateIndex = old.CreateIndex
		}
		s.nodes[r.Node] = n
		s.tables.Nodes = a.idx
	}
	for _, c := range r.Checks {
		key := CheckKey{Node: r.Node, CheckID: c.CheckID}
		prev, had := s.checks[key]
		if had && prev.Name == c.Name && prev.Status == c.Status {
			continue
		}
		// Invalidate before writing the check, as Consul does (S12).
		if c.Status == HealthCritical {
			a.invalidateBoundTo(key)
		}
		check := Check{Node: r.Node, CheckID: c.CheckID, Name: c.Name, Status: c.Status,
			CreateIndex: a.idx, ModifyIndex: a.idx}
		if had {
			check.CreateIndex = prev.CreateIndex
		}
		s.checks[key] = check
		s.tables.Checks = a.idx
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
	if d.CheckID != "" {
		a.deleteCheck(CheckKey(d))
		return
	}
	for _, c := range s.CheckList(d.Node, "") {
		a.deleteCheck(CheckKey{Node: c.Node, CheckID: c.CheckID})
	}
	delete(s.nodes, d.Node)
	s.tables.Nodes = a.idx
	for _, se := range s.SessionList(d.Node) {
		a.invalidate(se.ID)
	}
}

func (a *applier) deleteCheck(key CheckKey) {
	if _, ok := a.s.checks[key]; !ok {
		return
	}
	delete(a.s.checks, key)
	a.s.tables.Checks = a.idx
	a.invalidateBoundTo(key)
}

// invalidateBoundTo invalidates every session bound to the check (S11, S12).
func (a *applier) invalidateBoundTo(key CheckKey) {
	for _, se := range a.s.SessionList(key.Node) {
		if slices.Contains(se.Checks, key.CheckID) {
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
		LockDelay: c.LockDelay, Behavior: behavior, TTL: c.TTL,
		CreateIndex: a.idx, ModifyIndex: a.idx,
	}
	a.s.tables.Sessions = a.idx
	a.res.SessionID = c.ID
}

// validateSession applies S3, S4 and S6 in Consul's order: request fields
// first, then the catalog.
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
	for _, id := range c.Checks {
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
