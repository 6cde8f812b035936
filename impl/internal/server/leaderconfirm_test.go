package server

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// scriptedLeader is a leaderView whose answers a test scripts: one value per
// read, the last one repeated.
type scriptedLeader struct {
	states []raft.RaftState
	terms  []uint64
	last   uint64
}

func (l *scriptedLeader) State() raft.RaftState {
	s := l.states[0]
	if len(l.states) > 1 {
		l.states = l.states[1:]
	}
	return s
}

func (l *scriptedLeader) CurrentTerm() uint64 {
	t := l.terms[0]
	if len(l.terms) > 1 {
		l.terms = l.terms[1:]
	}
	return t
}

func (l *scriptedLeader) LastIndex() uint64 { return l.last }

// scriptedApplied is index waits the test advances, with a scripted time
// since the last apply, so no case depends on how fast the test runs.
type scriptedApplied struct {
	mu      sync.Mutex
	index   uint64
	waiters []appliedWaiter
	since   time.Duration
}

type appliedWaiter struct {
	index uint64
	ch    chan struct{}
}

func (a *scriptedApplied) Reached(index uint64) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan struct{})
	if index <= a.index {
		close(ch)
	} else {
		a.waiters = append(a.waiters, appliedWaiter{index, ch})
	}
	return ch
}

func (a *scriptedApplied) SinceAdvance() time.Duration { return a.since }

// advance applies up to index, waking the waiters it reaches.
func (a *scriptedApplied) advance(index uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.index = max(a.index, index)
	kept := a.waiters[:0]
	for _, w := range a.waiters {
		if w.index <= a.index {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	a.waiters = kept
}

// pending counts the waits not reached yet.
func (a *scriptedApplied) pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waiters)
}

// TestConfirmByCommit: leadership is confirmed without a heartbeat round only
// by applying an entry past the log's end at the call, while one term was led
// throughout, on a log that applied something within the wait; in every
// other case the heartbeat round (verify) decides.
func TestConfirmByCommit(t *testing.T) {
	leader, follower := raft.Leader, raft.Follower
	cases := []struct {
		name       string
		states     []raft.RaftState
		terms      []uint64
		applied    uint64        // the state machine's applied index during the wait
		idle       time.Duration // since the last apply, at the call
		wantVerify bool
	}{
		{"entry past the log's end applied, same term, still leading", []raft.RaftState{leader}, []uint64{3}, 11, 0, false},
		{"only the log's end at the call applied (the wait runs out)", []raft.RaftState{leader}, []uint64{3}, 10, 0, true},
		{"not leading at the call", []raft.RaftState{follower, leader}, []uint64{3}, 11, 0, true},
		{"stepped down by the end", []raft.RaftState{leader, follower}, []uint64{3}, 11, 0, true},
		{"leading again, in a later term", []raft.RaftState{leader}, []uint64{3, 5}, 11, 0, true},
		{"log idle for longer than the wait", []raft.RaftState{leader}, []uint64{3}, 11, 2 * time.Millisecond, true},
		{"log idle for just the wait", []raft.RaftState{leader}, []uint64{3}, 11, time.Millisecond, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &scriptedLeader{states: c.states, terms: c.terms, last: 10}
			a := &scriptedApplied{since: c.idle}
			a.advance(c.applied)
			verified := false
			err := confirmByCommit(context.Background(), r, a, time.Millisecond, func(context.Context) error {
				verified = true
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if verified != c.wantVerify {
				t.Fatalf("heartbeat round used: %v, want %v", verified, c.wantVerify)
			}
		})
	}
}

// TestConfirmByCommitWaitsForTheEntry: an entry applied during the wait
// confirms as soon as it is applied; verify's error is the answer when it
// decides, and a caller that leaves gets its context's error.
func TestConfirmByCommitWaitsForTheEntry(t *testing.T) {
	r := &scriptedLeader{states: []raft.RaftState{raft.Leader}, terms: []uint64{3}, last: 10}
	a := &scriptedApplied{}
	a.advance(10)
	go func() {
		// Only once confirm waits on 11, so that the wait itself is tested
		// and not an index already reached.
		for a.pending() == 0 {
			runtime.Gosched()
		}
		a.advance(11)
	}()
	noVerify := func(context.Context) error { return errors.New("verify called") }
	if err := confirmByCommit(context.Background(), r, a, time.Hour, noVerify); err != nil {
		t.Fatalf("entry 11 applied during the wait: %v", err)
	}

	r = &scriptedLeader{states: []raft.RaftState{raft.Leader}, terms: []uint64{3}, last: 20}
	if err := confirmByCommit(context.Background(), r, a, time.Millisecond, func(context.Context) error { return ErrNotLeader }); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("verify answered ErrNotLeader, confirm answered %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := confirmByCommit(ctx, r, a, time.Hour, noVerify); !errors.Is(err, context.Canceled) {
		t.Fatalf("caller left: %v, want context.Canceled", err)
	}
}
