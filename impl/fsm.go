package impl

import (
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
)

// fsm is model.State as a raft state machine. Besides applying commands it
// does the per-server side effects Consul does at apply time: arming
// lock-delays on this server's clock, telling the leader's TTL book which
// sessions are gone, and waking blocking queries.
type fsm struct {
	codec  *wireCodec
	delays *lockDelayGuard
	// invalidated is told the sessions each applied command invalidated; the
	// server points it at its TTL book. Set before raft starts, never changed.
	invalidated func(ids []string)
	// apply, if set, replaces state.Apply (Config.Apply, a test seam).
	apply func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result)
	// observe, if set, is told each change (Config.Observe, a test seam).
	observe func(Change)
	// awaitDurable, if set, returns once this server's log is on disk up
	// to an index (logSync.await): nothing is applied, and so seen, before.
	awaitDurable func(index uint64) error

	mu      sync.RWMutex
	state   *model.State
	changed chan struct{} // closed and replaced at each change, under mu
	// keys wakes single-key blocking reads, after mu is released.
	keys keyWatches
}

func newFSM(c *wireCodec, delays *lockDelayGuard, invalidated func([]string)) *fsm {
	if invalidated == nil {
		invalidated = func([]string) {}
	}
	return &fsm{
		codec:       c,
		delays:      delays,
		invalidated: invalidated,
		state:       model.New(),
		changed:     make(chan struct{}),
	}
}

// Apply implements raft.FSM. It answers model.Result, or an error for an
// entry it cannot decode; it never panics on the entry's content.
func (f *fsm) Apply(l *raft.Log) any {
	if f.awaitDurable != nil {
		if err := f.awaitDurable(l.Index); err != nil {
			// The entry may not be on this disk and never will be; going on
			// would let clients see a write a restart can lose.
			panic(fmt.Sprintf("raft entry %d: this server's log is not durable, stopping: %v", l.Index, err))
		}
	}
	cmd, err := f.codec.decodeCommand(l.Data)
	if err != nil {
		return fmt.Errorf("raft entry %d: %w", l.Index, err)
	}
	f.mu.Lock()
	var prev *model.State
	if f.observe != nil {
		prev = f.state.Clone()
	}
	before := f.state.Tables()
	var res model.Result
	if f.apply != nil {
		f.state, res = f.apply(f.state, l.Index, cmd)
	} else {
		res = f.state.Apply(l.Index, cmd)
	}
	// Arm before the release becomes visible, so that no client can see the
	// key free and get an acquire past the leader's lock-delay check. (An
	// acquire proposed before this entry applied can still land just after
	// it; Consul's pre-raft check has the same window.)
	f.delays.arm(res.LockDelays)
	changed := f.state.Tables() != before
	if changed {
		f.notifyLocked()
	}
	f.mu.Unlock()
	switch {
	case !changed:
	case f.apply != nil:
		// A test seam may change keys it does not list.
		f.keys.fireAll()
	default:
		f.keys.fire(res.KeysChanged)
	}
	if len(res.Invalidated) > 0 {
		f.invalidated(res.Invalidated)
	}
	if f.observe != nil {
		// Only this goroutine writes f.state, so reading it unlocked here
		// is safe; readers elsewhere hold the read lock.
		f.observe(Change{Index: l.Index, Term: l.Term, Command: &cmd, Result: res, Before: prev, After: f.state})
	}
	return res
}

// notifyLocked wakes every waiter of the previous Changed channel. Holding mu
// makes "Changed, then Read" race-free for blocking queries.
func (f *fsm) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Changed returns a channel closed at the next applied change. Take it before
// reading, so that a change between the read and the wait is not missed.
func (f *fsm) Changed() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.changed
}

// read calls fn with the state under the read lock.
func (f *fsm) read(fn func(s *model.State)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.state)
}

// Snapshot implements raft.FSM. Clone is cheap (entries are values whose
// byte slices the model never mutates), so raft's apply loop is held briefly
// and encoding happens in Persist, off that loop.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return &fsmSnapshot{codec: f.codec, state: f.state.Clone()}, nil
}

// Restore implements raft.FSM: it replaces the whole state and forgets every
// lock-delay, as Consul does (CONSUL.md §4).
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	s, err := f.codec.decodeSnapshot(data)
	if err != nil {
		return err
	}
	f.mu.Lock()
	prev := f.state
	f.state = s
	f.notifyLocked()
	f.mu.Unlock()
	f.keys.fireAll()
	f.delays.reset()
	if f.observe != nil {
		f.observe(Change{Index: s.Index(), Before: prev, After: s})
	}
	return nil
}

type fsmSnapshot struct {
	codec *wireCodec
	state *model.State
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	data, err := s.codec.encodeSnapshot(s.state)
	if err == nil {
		_, err = sink.Write(data)
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("close snapshot: %w", err)
	}
	return nil
}

func (s *fsmSnapshot) Release() {}
