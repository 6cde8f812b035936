package tla

import (
	"testing"

	"github.com/tenurekv/tenure/model"
)

// Broken transition functions: each wraps the real Apply and breaks one rule
// of the contract. The explorer must catch every one, both with the model's
// own checks and with the TLA+ invariants alone.

// heldBefore is the key's holder before the command, "" if none or absent.
func heldBefore(m *model.State, key string) string {
	e, _ := m.Get(key)
	return e.Session
}

// edited applies f to m as plain data and returns the result: how a broken
// transition changes what the model's own Apply would never change.
func edited(m *model.State, f func(s *model.Snapshot)) *model.State {
	snap := m.Snapshot()
	f(&snap)
	return model.RestoreUnchecked(snap)
}

// noBump: an acquire that changes the holder keeps the old LockIndex (and
// does not raise the watermark), so sequencers repeat (S27, S41).
func noBump(m *model.State, idx uint64, cmd model.Command) (*model.State, model.Result) {
	if cmd.KV == nil || cmd.KV.Verb != model.KVLock {
		return m, m.Apply(idx, cmd)
	}
	key := cmd.KV.Key
	prev, had := m.Get(key)
	issued := m.LockIssued(key) // 0: none recorded
	res := m.Apply(idx, cmd)
	if res.Failed() || !res.OK || (had && prev.Session == cmd.KV.Session) {
		return m, res
	}
	return edited(m, func(s *model.Snapshot) {
		e := s.KV[key]
		e.LockIndex = prev.LockIndex
		s.KV[key] = e
		if issued > 0 {
			s.LockIssued[key] = issued
		} else {
			delete(s.LockIssued, key)
		}
	}), res
}

// noWatermark: Consul's rule, an absent key is created with LockIndex 1 and
// the issued watermark follows the key's LockIndex, so a key deleted and
// re-acquired reissues old sequencers.
func noWatermark(m *model.State, idx uint64, cmd model.Command) (*model.State, model.Result) {
	if cmd.KV == nil || cmd.KV.Verb != model.KVLock {
		return m, m.Apply(idx, cmd)
	}
	key := cmd.KV.Key
	prev, had := m.Get(key)
	res := m.Apply(idx, cmd)
	if res.Failed() || !res.OK || (had && prev.Session == cmd.KV.Session) {
		return m, res
	}
	return edited(m, func(s *model.Snapshot) {
		e := s.KV[key]
		e.LockIndex = prev.LockIndex + 1 // prev is zero when the key was absent
		s.KV[key] = e
		s.LockIssued[key] = e.LockIndex
	}), res
}

// forgetLockDelay: invalidations arm no lock-delay (S22).
func forgetLockDelay(m *model.State, idx uint64, cmd model.Command) (*model.State, model.Result) {
	res := m.Apply(idx, cmd)
	res.LockDelays = nil
	return m, res
}

// keepHolder: a release-behaviour invalidation leaves its keys held by the
// dead session (S16).
func keepHolder(m *model.State, idx uint64, cmd model.Command) (*model.State, model.Result) {
	holders := map[string]string{}
	for k, e := range m.Entries() {
		holders[k] = e.Session
	}
	res := m.Apply(idx, cmd)
	if len(res.Invalidated) == 0 {
		return m, res
	}
	return edited(m, func(s *model.Snapshot) {
		for k, e := range s.KV {
			if holders[k] != "" && e.Session == "" {
				e.Session = holders[k]
				s.KV[k] = e
			}
		}
	}), res
}

// reapNoFloor: a reap forgets deleted keys' watermarks without raising the
// floor, so a re-created key starts again at LockIndex 1 (S52).
func reapNoFloor(m *model.State, idx uint64, cmd model.Command) (*model.State, model.Result) {
	floor := m.LockFloor()
	res := m.Apply(idx, cmd)
	if cmd.Reap == nil {
		return m, res
	}
	return edited(m, func(s *model.Snapshot) { s.LockFloor = floor }), res
}

// keepQueries: an invalidation leaves the session's prepared queries behind (S58).
func keepQueries(m *model.State, idx uint64, cmd model.Command) (*model.State, model.Result) {
	before := m.QueryList()
	res := m.Apply(idx, cmd)
	if len(res.QueriesDeleted) == 0 {
		return m, res
	}
	res.QueriesDeleted = nil
	return edited(m, func(s *model.Snapshot) {
		for _, q := range before {
			s.Queries[q.ID] = q
		}
	}), res
}

// silentServiceDeregister: deregistering a service removes it and its
// checks but invalidates none of the sessions bound to them (S55, S56).
func silentServiceDeregister(m *model.State, idx uint64, cmd model.Command) (*model.State, model.Result) {
	if cmd.Deregister == nil || cmd.Deregister.ServiceID == "" {
		return m, m.Apply(idx, cmd)
	}
	d := *cmd.Deregister
	return edited(m, func(s *model.Snapshot) {
		delete(s.Services, model.ServiceKey{Node: d.Node, ServiceID: d.ServiceID})
		for k, c := range s.Checks {
			if c.Node == d.Node && c.ServiceID == d.ServiceID {
				delete(s.Checks, k)
			}
		}
		s.Tables.Services, s.Tables.Checks = idx, idx
	}), model.Result{Index: idx, OK: true}
}

// steal: an acquire of a key held by another session succeeds (S29).
func steal(m *model.State, idx uint64, cmd model.Command) (*model.State, model.Result) {
	if cmd.KV != nil && cmd.KV.Verb == model.KVLock {
		if h := heldBefore(m, cmd.KV.Key); h != "" && h != cmd.KV.Session {
			m = edited(m, func(s *model.Snapshot) {
				e := s.KV[cmd.KV.Key]
				e.Session = ""
				s.KV[cmd.KV.Key] = e
			})
		}
	}
	return m, m.Apply(idx, cmd)
}

func TestBrokenTransitionsAreCaught(t *testing.T) {
	cases := []struct {
		name   string
		config string
		apply  applyFunc
		want   string // the TLA+ check that catches it first, without the model's checks
		// wantInv, if set, catches it when the action properties are left out too.
		wantInv string
	}{
		{"acquire does not bump LockIndex", "MCSessions_release.cfg", noBump, "LockIndexIssued", ""},
		{"acquire ignores the watermark", "MCSessions_delete.cfg", noWatermark, "SequencerNeverReissued", ""},
		{"invalidation arms no lock-delay", "MCSessions_release.cfg", forgetLockDelay, "InvalidationEffects", ""},
		{"invalidation keeps the holder", "MCSessions_release.cfg", keepHolder, "InvalidationEffects", "HolderLive"},
		{"acquire steals a held key", "MCSessions_release.cfg", steal, "MutualExclusion", ""},
		{"reap forgets a watermark without the floor", "MCSessions_delete.cfg", reapNoFloor, "LockIndexMonotonic", "SequencerNeverReissued"},
		{"invalidation keeps the session's queries", "MCSessions_release.cfg", keepQueries, "QueryBoundLive", ""},
		{"service deregistration invalidates nothing", "MCSessions_release.cfg", silentServiceDeregister, "BoundChecksHealthy", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := explore(cfg, options{Apply: tc.apply, SkipModelChecks: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Violation == nil {
				t.Fatalf("TLA+ checks missed the bug in %d states", rep.Distinct)
			}
			if rep.Violation.Check != tc.want {
				t.Fatalf("caught by %s (%v), want %s", rep.Violation.Check, rep.Violation.Err, tc.want)
			}
			t.Logf("TLA+ checks: %v\n%s", rep.Violation, formatTrace(rep.Violation.Trace))

			if tc.wantInv != "" {
				noProps := cfg
				noProps.Properties = nil
				rep, err := explore(noProps, options{Apply: tc.apply, SkipModelChecks: true})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Violation == nil || rep.Violation.Check != tc.wantInv {
					t.Fatalf("without action properties: violation %v, want %s", rep.Violation, tc.wantInv)
				}
			}

			rep, err = explore(cfg, options{Apply: tc.apply})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Violation == nil {
				t.Fatalf("all checks missed the bug in %d states", rep.Distinct)
			}
			t.Logf("all checks: %v", rep.Violation)
		})
	}
}

// TestWatermarkBugBreaksFencing: without the watermark, the sequencer check
// alone no longer protects the fenced resource. Only the fencing invariant
// is checked here, so the run must reach an accepted stale write.
func TestWatermarkBugBreaksFencing(t *testing.T) {
	cfg, err := loadConfig("MCSessions_delete.cfg")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Invariants = []string{"FencedNoStaleWrite"}
	cfg.Properties = nil
	rep, err := explore(cfg, options{Apply: noWatermark, SkipModelChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Violation == nil || rep.Violation.Check != "FencedNoStaleWrite" {
		t.Fatalf("violation = %v, want FencedNoStaleWrite", rep.Violation)
	}
	t.Logf("%v\n%s", rep.Violation, formatTrace(rep.Violation.Trace))

	rep, err = explore(cfg, options{SkipModelChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Violation != nil {
		t.Fatalf("the real model fails too: %v", rep.Violation)
	}
}
