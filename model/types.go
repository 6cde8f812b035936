package model

import "time"

// Limits and defaults taken from Consul (spec/SPEC.md S2, S3, S5, S39, S44).
const (
	DefaultLockDelay  = 15 * time.Second
	MaxLockDelay      = 60 * time.Second
	MinSessionTTL     = 10 * time.Second
	MaxSessionTTL     = 24 * time.Hour
	MaxValueSize      = 512 * 1024
	MaxTxnOps         = 128
	SerfHealthCheckID = "serfHealth"
)

// Health is a check status.
type Health string

// The three check statuses Consul knows.
const (
	HealthPassing  Health = "passing"
	HealthWarning  Health = "warning"
	HealthCritical Health = "critical"
)

// Valid reports whether h is one of the three statuses.
func (h Health) Valid() bool {
	return h == HealthPassing || h == HealthWarning || h == HealthCritical
}

// Behavior says what invalidation does to the keys a session holds.
type Behavior string

// Session behaviours (S4, S16, S17).
const (
	BehaviorRelease Behavior = "release"
	BehaviorDelete  Behavior = "delete"
)

// Node is a catalog node.
type Node struct {
	Name        string
	Address     string
	CreateIndex uint64
	ModifyIndex uint64
}

// Check is a health check registered on a node.
type Check struct {
	Node        string
	CheckID     string
	Name        string
	Status      Health
	CreateIndex uint64
	ModifyIndex uint64
}

// Session binds a node and some of its checks to the locks it holds.
// Sessions are immutable once created (S1).
type Session struct {
	ID        string
	Name      string
	Node      string
	Checks    []string // check IDs on Node; empty means bound to the node only (S7)
	LockDelay time.Duration
	Behavior  Behavior
	// TTL is kept as submitted ("30s", or "" for none) because Consul echoes it verbatim.
	TTL         string
	CreateIndex uint64
	ModifyIndex uint64
}

// TTLDuration is the parsed TTL; 0 means the session has none. Create
// validated it, so the parse cannot fail for a stored session.
func (s Session) TTLDuration() time.Duration {
	if s.TTL == "" {
		return 0
	}
	d, err := time.ParseDuration(s.TTL)
	if err != nil {
		return 0
	}
	return d
}

// EffectiveLockDelay is the delay an invalidation arms: LockDelay capped at 60 s (S5, S22).
func (s Session) EffectiveLockDelay() time.Duration {
	return min(max(s.LockDelay, 0), MaxLockDelay)
}

// KVEntry is one key. LockIndex counts the acquisitions that changed the
// holder; with Session it forms the key's current sequencer (S40).
type KVEntry struct {
	Key         string
	Value       []byte
	Flags       uint64
	LockIndex   uint64
	Session     string
	CreateIndex uint64
	ModifyIndex uint64
}

// Sequencer names one tenure of a lock (S40, S41).
type Sequencer struct {
	Key       string
	LockIndex uint64
	Session   string
}

// Sequencer returns the entry's current sequencer; Session is "" when unheld.
func (e KVEntry) Sequencer() Sequencer {
	return Sequencer{Key: e.Key, LockIndex: e.LockIndex, Session: e.Session}
}

// LockDelay is a key whose lock-delay an invalidation armed (S22).
type LockDelay struct {
	Key   string
	Delay time.Duration
}
