package fsm

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

// FSM is model.State as a raft state machine. Besides applying commands it
// does the per-server side effects Consul does at apply time: arming
// lock-delays on this server's clock and telling the leader's TTL book which
// sessions are gone (both through Effects), and waking blocking
// queries.
type FSM struct {
	codec *wireCodec
	// leader hears what each applied entry means for this server's leader
	// logic. Set before raft starts, never changed.
	leader Effects
	// apply, observe and awaitDurable are Options'.
	apply        ApplyFunc
	observe      func(Change)
	awaitDurable func(index uint64) error
	fatal        func(error)
	// configurationChanged is Options.ConfigurationChanged.
	configurationChanged func()
	// stopped is set once AwaitDurable has failed (Options.Fatal).
	stopped atomic.Bool

	mu    sync.RWMutex
	state *model.State
	// observed, kept only when observe is set, is an unchanging copy of
	// state as of the last entry observed: the next entry's Before, and
	// what the copy after it shares its unchanged tables with
	// (model.State.CloneSince). Only the applying goroutine uses it.
	observed *model.State
	changed  chan struct{} // closed and replaced at each change, under mu
	// catalog is changed's counterpart for the catalog tables (nodes,
	// services, checks) alone, so that a watcher of this node's own
	// registration is not woken by every KV write.
	catalog chan struct{}
	// keys wakes single-key blocking reads, after mu is released.
	keys keyWatches
	// applied wakes those waiting for an index to be applied (leadership
	// confirmation, confirmByCommit).
	applied appliedWaits
}

var _ raft.BatchingFSM = (*FSM)(nil)

// Effects is all the FSM tells the leader's logic (leader.Core), and
// the only way the two meet: the lock-delays an applied entry armed on
// this server's clock, a restore that forgets them, and the sessions an
// entry invalidated, whose TTL deadlines go.
type Effects interface {
	ArmLockDelays(delays []model.LockDelay)
	ForgetLockDelays()
	SessionsInvalidated(ids []string)
}

var _ Effects = (*leader.Core)(nil)

// ApplyFunc applies cmd at index to st and returns the state that follows
// (st itself, changed, or another) and the result.
type ApplyFunc func(st *model.State, index uint64, cmd model.Command) (*model.State, model.Result)

// Options are the optional parts of an FSM.
type Options struct {
	// Apply, if set, replaces state.Apply (server.Config.Apply, a test seam).
	Apply ApplyFunc
	// Observe, if set, is told each change (server.Config.Observe).
	Observe func(Change)
	// AwaitDurable, if set, returns once this server's log is on disk up
	// to an index (raftlog.LogSync.Await): nothing is applied, and so
	// seen, before.
	AwaitDurable func(index uint64) error
	// Fatal, if set, is told that AwaitDurable failed, instead of the
	// panic that ends the process. From then on the FSM applies nothing:
	// every entry answers ErrNotDurable. The simulator crashes the node
	// here, as the panic would.
	Fatal func(error)
	// ConfigurationChanged, if set, is called (and must not block) once a
	// batch holding a raft configuration change is applied, and after a
	// snapshot restore: the server then looks at its raft ID again.
	ConfigurationChanged func()
}

// ErrNotDurable answers the entries of a server whose log failed to reach
// its disk (Options.Fatal).
var ErrNotDurable = errors.New("this server's log is not durable: stopped")

// Change is one step of the state machine, as Options.Observe sees it.
// Before and After are the states around it; neither may be modified, and
// After is only valid during the call.
type Change struct {
	// index is the entry's raft index; for a restore, the restored
	// state's own Index().
	index uint64
	// Term is the raft term the entry was proposed in (0 for a restore):
	// an entry can commit, and apply, in a later leader's term.
	Term uint64
	// Command is the entry's command; nil for a snapshot restore.
	Command *model.Command
	result  model.Result
	Before  *model.State
	After   *model.State
}

// New is an empty state machine that tells leader what applied entries
// armed and invalidated.
func New(leader Effects, o Options) *FSM {
	f := newFSM(newWireCodec(), leader)
	f.apply, f.observe, f.awaitDurable, f.fatal = o.Apply, o.Observe, o.AwaitDurable, o.Fatal
	f.configurationChanged = o.ConfigurationChanged
	return f
}

// Encode is cmd as a raft log entry's data, in the format Apply decodes.
func (f *FSM) Encode(cmd model.Command) ([]byte, error) { return f.codec.encodeCommand(cmd) }

// WatchKey returns a channel closed at the next applied change of key, and
// a stop for when the caller no longer waits. Take it before reading.
func (f *FSM) WatchKey(key string) (<-chan struct{}, func()) { return f.keys.watch(key) }

// Reached returns a channel closed once index has been applied.
func (f *FSM) Reached(index uint64) <-chan struct{} { return f.applied.reached(index) }

// SinceAdvance is how long ago the last index was applied.
func (f *FSM) SinceAdvance() time.Duration { return f.applied.sinceAdvance() }

func newFSM(c *wireCodec, leader Effects) *FSM {
	return &FSM{
		codec:   c,
		leader:  leader,
		state:   model.New(),
		changed: make(chan struct{}),
		catalog: make(chan struct{}),
	}
}

// Apply implements raft.FSM. It answers model.Result, or an error for an
// entry it cannot decode; it never panics on the entry's content. Raft calls
// ApplyBatch instead while running; Apply remains for raft.RecoverCluster
// and for tests, and shares ApplyBatch's path so the two cannot drift.
func (f *FSM) Apply(l *raft.Log) any {
	var out [1]any
	f.applyLogs([]*raft.Log{l}, out[:])
	return out[0]
}

// ApplyBatch implements raft.BatchingFSM: the same results and side effects
// as Apply on each entry in order, but with one durability wait, one hold of
// the state lock and one wake of Changed per batch rather than per entry.
// Entries other than commands (raft also sends configuration changes) are
// not the state machine's and answer nil.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	f.applyLogs(logs, out)
	return out
}

// applied is one decoded command of a batch, kept from the locked apply to
// the side effects done after unlocking; its result is in the batch's
// responses.
type applied struct {
	pos     int // the entry's position in the batch
	cmd     model.Command
	changed bool
	before  *model.State // a copy, only when observe is set
}

// applyLogs applies logs in order and puts each entry's response at the same
// position of out.
func (f *FSM) applyLogs(logs []*raft.Log, out []any) {
	var last, lastGated uint64
	n, configuration := 0, false
	for _, l := range logs {
		switch l.Type {
		case raft.LogCommand:
			last, lastGated = l.Index, l.Index
			n++
		case raft.LogConfiguration:
			// raft answers a membership change once its batch is applied,
			// and tenure waits for that answer before the next change.
			lastGated = l.Index
			configuration = true
		}
	}
	if f.stopped.Load() {
		refuseAll(logs, out)
		return
	}
	if f.awaitDurable != nil && lastGated > 0 {
		// Entries reach the disk in order, so waiting for the last one
		// covers the batch.
		if err := f.awaitDurable(lastGated); err != nil {
			// The entry may not be on this disk and never will be; going on
			// would let clients see a write a restart can lose.
			err = fmt.Errorf("raft entry %d: %w: %w", lastGated, ErrNotDurable, err)
			f.stopped.Store(true)
			if f.fatal == nil {
				panic(err.Error())
			}
			f.fatal(err)
			refuseAll(logs, out)
			return
		}
	}
	if configuration && f.configurationChanged != nil {
		f.configurationChanged()
	}
	if n == 0 {
		return
	}
	// Once the batch's effects are visible, even for entries that could not
	// be decoded.
	defer f.applied.advance(last)
	// Decoding needs no lock; readers wait only for the applying itself.
	// Apply's single entry, and small batches, keep their records on the
	// stack.
	var small [4]applied
	recs := small[:0]
	if n > len(small) {
		recs = make([]applied, 0, n)
	}
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		cmd, err := f.codec.decodeCommand(l.Data)
		if err != nil {
			out[i] = fmt.Errorf("raft entry %d: %w", l.Index, err)
			continue
		}
		recs = append(recs, applied{pos: i, cmd: cmd})
	}
	if len(recs) == 0 {
		return
	}
	anyChanged := false
	f.mu.Lock()
	start := f.state.Tables()
	for i := range recs {
		r := &recs[i]
		if f.observe != nil {
			r.before = f.observedCopy()
		}
		before := f.state.Tables()
		var res model.Result
		index := logs[r.pos].Index
		if f.apply != nil {
			f.state, res = f.apply(f.state, index, r.cmd)
		} else {
			res = f.state.Apply(index, r.cmd)
		}
		// Arm before the release becomes visible, so that no client can see
		// the key free and get an acquire past the leader's lock-delay check.
		// (An acquire proposed before this entry applied can still land just
		// after it; Consul's pre-raft check has the same window.)
		f.leader.ArmLockDelays(res.LockDelays)
		if f.observe != nil && f.apply == nil {
			f.observed = f.state.CloneSince(f.observed)
		}
		r.changed = f.state.Tables() != before
		anyChanged = anyChanged || r.changed
		out[r.pos] = res
	}
	if anyChanged {
		// One wake for the batch: a blocking query took its channel before
		// reading, so it either read before the lock, and this wakes it, or
		// reads after the unlock and sees every entry.
		// A test seam may change any table without moving its index.
		f.notifyLocked(f.apply != nil || catalogMoved(start, f.state.Tables()))
	}
	f.mu.Unlock()
	if anyChanged && f.apply != nil {
		// A test seam may change keys it does not list.
		f.keys.fireAll()
	}
	for i := range recs {
		r := &recs[i]
		res := out[r.pos].(model.Result)
		if r.changed && f.apply == nil && len(res.KeysChanged) > 0 {
			f.keys.fire(res.KeysChanged)
		}
		if len(res.Invalidated) > 0 {
			f.leader.SessionsInvalidated(res.Invalidated)
		}
		if f.observe != nil {
			// Each entry's After is the copy taken before the next one; the
			// last one's is the state itself, which only this goroutine
			// writes, so reading it unlocked here is safe.
			after := f.state
			if i+1 < len(recs) {
				after = recs[i+1].before
			}
			l, cmd := logs[r.pos], r.cmd // a copy, so that recs can stay on the stack
			f.observe(Change{index: l.Index, Term: l.Term, Command: &cmd, result: res, Before: r.before, After: after})
		}
	}
}

// observedCopy is an unchanging copy of the state as it is now, for an
// observed entry's Before. A test seam (apply) may change a table without
// moving its index, so there each entry gets a full copy.
func (f *FSM) observedCopy() *model.State {
	if f.apply != nil || f.observed == nil {
		f.observed = f.state.Clone()
	}
	return f.observed
}

// notifyLocked wakes every waiter of the previous Changed channel, and of
// CatalogChanged's if catalog. Holding mu makes "Changed, then Read"
// race-free for blocking queries.
func (f *FSM) notifyLocked(catalog bool) {
	close(f.changed)
	f.changed = make(chan struct{})
	if catalog {
		close(f.catalog)
		f.catalog = make(chan struct{})
	}
}

func catalogMoved(a, b model.TableIndexes) bool {
	return a.Nodes != b.Nodes || a.Services != b.Services || a.Checks != b.Checks
}

// CatalogChanged is Changed for the catalog tables (nodes, services,
// checks) only; the same take-before-reading rule applies.
func (f *FSM) CatalogChanged() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.catalog
}

// Changed returns a channel closed at the next applied change. Take it before
// reading, so that a change between the read and the wait is not missed.
func (f *FSM) Changed() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.changed
}

// Read calls fn with the state under the read lock; fn must not keep it.
func (f *FSM) Read(fn func(s *model.State)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.state)
}

// Snapshot implements raft.FSM. Clone is cheap (entries are values whose
// byte slices the model never mutates), so raft's apply loop is held briefly
// and encoding happens in Persist, off that loop.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return &fsmSnapshot{codec: f.codec, state: f.state.Clone()}, nil
}

// Restore implements raft.FSM: it replaces the whole state and forgets every
// lock-delay, as Consul does (CONSUL.md §4).
func (f *FSM) Restore(rc io.ReadCloser) error {
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
	f.observed = nil // the next entry copies the restored state afresh
	f.notifyLocked(true)
	f.mu.Unlock()
	f.keys.fireAll()
	f.leader.ForgetLockDelays()
	f.applied.advance(s.Index())
	if f.configurationChanged != nil {
		f.configurationChanged()
	}
	if f.observe != nil {
		f.observe(Change{index: s.Index(), Before: prev, After: s})
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

// refuseAll answers every command of a stopped server's batch with
// ErrNotDurable.
func refuseAll(logs []*raft.Log, out []any) {
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			out[i] = ErrNotDurable
		}
	}
}
