package model

import (
	"bytes"
	"fmt"
)

// kvOutcome is one KV operation's answer. ok=false with reason is a refusal
// (a plain request answers false; a txn op fails with reason); err is a
// rejection in both cases.
type kvOutcome struct {
	entries []KVEntry
	ok      bool
	reason  string
	err     *Error
	// delayed marks a lock refused for a lock-delay the leader could not see.
	delayed bool
	// record is a catalog op's result in a transaction (S68).
	record TxnResult
}

func refused(format string, args ...any) kvOutcome {
	return kvOutcome{reason: fmt.Sprintf(format, args...)}
}

func rejected(err *Error) kvOutcome { return kvOutcome{err: err} }

func accepted(entries ...KVEntry) kvOutcome { return kvOutcome{ok: true, entries: entries} }

// kv applies a stand-alone KV write (an HTTP PUT or DELETE on /v1/kv).
func (a *applier) kv(o KVOp) {
	if !o.Verb.IsWrite() {
		a.fail(errorf(ErrInvalid, "unknown KV verb %q", o.Verb))
		return
	}
	out := a.kvOp(o)
	if out.err != nil {
		a.fail(out.err)
		return
	}
	a.boolAnswer = true
	a.res.OK = out.ok
	if o.Verb == KVLock && out.ok {
		a.res.Locked = out.entries[0]
	}
	if out.delayed {
		a.res.DelayRefused = append(a.res.DelayRefused, o.Key)
	}
}

// validateKVOp rejects malformed input before anything is touched (S39).
func validateKVOp(o KVOp) *Error {
	if o.Key == "" && o.Verb != KVGetTree && o.Verb != KVDeleteTree {
		return errorf(ErrInvalid, "Missing key name")
	}
	if len(o.Value) > MaxValueSize {
		return errorf(ErrTooLarge, "Value for key %q is too large (%d > %d bytes)", o.Key, len(o.Value), MaxValueSize)
	}
	if (o.Verb == KVLock || o.Verb == KVUnlock) && o.Session == "" {
		return errorf(ErrInvalid, "missing session")
	}
	return nil
}

// kvOp is the single definition of every KV verb's semantics (S26-S43).
func (a *applier) kvOp(o KVOp) kvOutcome {
	if err := validateKVOp(o); err != nil {
		return rejected(err)
	}
	s := a.s
	e, exists := s.kv[o.Key]
	switch o.Verb {
	case KVSet:
		return a.set(o, e, exists)
	case KVCAS:
		if (o.Index == 0 && exists) || (o.Index != 0 && (!exists || e.ModifyIndex != o.Index)) {
			return refused("failed to set key %q, index is stale", o.Key)
		}
		return a.set(o, e, exists)
	case KVLock:
		return a.lock(o, e, exists)
	case KVUnlock:
		if !exists || e.Session != o.Session {
			return refused("failed to unlock key %q, lock isn't held, or is held by another session", o.Key)
		}
		e.Session, e.Value, e.Flags = "", bytes.Clone(o.Value), o.Flags
		return accepted(withoutValue(a.putEntry(e)))
	case KVGet:
		if !exists {
			return refused("key %q doesn't exist", o.Key)
		}
		return accepted(e)
	case KVGetOrEmpty:
		if !exists {
			return accepted(KVEntry{Key: o.Key})
		}
		return accepted(e)
	case KVGetTree:
		return accepted(s.List(o.Key)...)
	case KVCheckIndex:
		if !exists {
			return refused("failed to check index, key %q doesn't exist", o.Key)
		}
		if e.ModifyIndex != o.Index {
			return refused("failed index check for key %q, current modify index %d != %d", o.Key, e.ModifyIndex, o.Index)
		}
		return accepted(withoutValue(e))
	case KVCheckSession:
		if !exists {
			return refused("failed to check session, key %q doesn't exist", o.Key)
		}
		if e.Session != o.Session {
			return refused("failed session check for key %q, current session %q != %q", o.Key, e.Session, o.Session)
		}
		return accepted(withoutValue(e))
	case KVCheckNotExists:
		if exists {
			return refused("key %q exists", o.Key)
		}
		return accepted()
	case KVCheckSequencer:
		if err := s.CheckSequencer(Sequencer{Key: o.Key, LockIndex: o.Index, Session: o.Session}); err != nil {
			return refused("%v", err)
		}
		return accepted(withoutValue(e))
	case KVDelete:
		if exists {
			a.deleteKey(o.Key)
		}
		return accepted()
	case KVDeleteCAS:
		if !exists {
			return accepted()
		}
		if e.ModifyIndex != o.Index {
			return refused("failed to delete key %q, index is stale", o.Key)
		}
		a.deleteKey(o.Key)
		return accepted()
	case KVDeleteTree:
		for _, victim := range s.List(o.Key) {
			a.deleteKey(victim.Key)
		}
		return accepted()
	}
	return refused("unknown KV verb %q", o.Verb)
}

// set writes Value and Flags, keeping Session and LockIndex (S32, S33). A
// write that changes nothing is skipped, as Consul does since 1.6 (S37).
func (a *applier) set(o KVOp, e KVEntry, exists bool) kvOutcome {
	if exists && e.Flags == o.Flags && bytes.Equal(e.Value, o.Value) {
		return accepted(withoutValue(e))
	}
	if !exists {
		e = KVEntry{Key: o.Key}
	}
	e.Value, e.Flags = bytes.Clone(o.Value), o.Flags
	return accepted(withoutValue(a.putEntry(e)))
}

// lock is acquire (S26-S30). A change of holder issues a LockIndex above every
// one issued for the key before, so sequencers are never reissued (S41).
func (a *applier) lock(o KVOp, e KVEntry, exists bool) kvOutcome {
	if _, live := a.s.sessions[o.Session]; !live {
		return rejected(errorf(ErrMissing, "invalid session %q", o.Session))
	}
	if o.LockDelaySeen != 0 && a.s.delayedAt[o.Key] > o.LockDelaySeen {
		out := refused("failed to lock key %q due to lock delay", o.Key)
		out.delayed = true
		return out
	}
	if exists && e.Session != "" {
		if heldByOther(e, o.Session) {
			return refused("failed to lock key %q, lock is already held", o.Key)
		}
		if e.Flags == o.Flags && bytes.Equal(e.Value, o.Value) {
			return accepted(withoutValue(e))
		}
		e.Value, e.Flags = bytes.Clone(o.Value), o.Flags
		return accepted(withoutValue(a.putEntry(e)))
	}
	if !exists {
		e = KVEntry{Key: o.Key}
	}
	issued := max(e.LockIndex, a.s.lockIssued[o.Key], a.s.lockFloor) + 1
	a.setIssued(o.Key, issued)
	e.LockIndex, e.Session = issued, o.Session
	e.Value, e.Flags = bytes.Clone(o.Value), o.Flags
	return accepted(withoutValue(a.putEntry(e)))
}

// heldByOther is S29's condition: the key has a holder and it is not session.
func heldByOther(e KVEntry, session string) bool { return e.Session != "" && e.Session != session }

// LockHeldByOther reports whether Apply would refuse the stand-alone lock o
// only because another session holds its key (S29): o is a well-formed
// lock, its session is live and the key's holder is someone else. Such a
// refusal changes nothing, so a leader may answer it from this state
// without a log entry, once it knows the state is current (S29).
func (s *State) LockHeldByOther(o KVOp) bool {
	if o.Verb != KVLock || validateKVOp(o) != nil {
		return false
	}
	if _, live := s.sessions[o.Session]; !live {
		return false
	}
	e, exists := s.kv[o.Key]
	return exists && heldByOther(e, o.Session)
}

func withoutValue(e KVEntry) KVEntry {
	e.Value = nil
	return e
}

// putEntry stores e at the applier's index, creating it if new.
func (a *applier) putEntry(e KVEntry) KVEntry {
	a.undo.saveKey(a.s, e.Key)
	a.touch(e.Key)
	if _, exists := a.s.kv[e.Key]; !exists {
		e.CreateIndex = a.idx
		delete(a.s.tombstones, e.Key)
	}
	e.ModifyIndex = a.idx
	a.s.kv[e.Key] = e
	a.s.tables.KV = a.idx
	return e
}

func (a *applier) deleteKey(key string) {
	a.undo.saveKey(a.s, key)
	a.touch(key)
	delete(a.s.kv, key)
	a.s.tombstones[key] = a.idx
	a.s.tables.KV = a.idx
}

func (a *applier) setIssued(key string, li uint64) {
	a.undo.saveKey(a.s, key)
	a.s.lockIssued[key] = li
}

// setDelayedAt is reached from invalidations, which a txn's catalog or
// session op may cause (S68, S69).
func (a *applier) setDelayedAt(key string) {
	a.undo.saveKey(a.s, key)
	a.s.delayedAt[key] = a.idx
}
