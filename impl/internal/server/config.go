package server

import (
	"errors"
	"fmt"
	"math/rand"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-uuid"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/impl/disk"
	"github.com/tenurekv/tenure/impl/internal/fsm"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// ACLConfig is what a server needs of the agent's acl block: deciding
// requests is the HTTP layer's (package acl over the replicated tables).
type ACLConfig struct {
	// Enabled: each leader, at the start of its term, writes the builtin
	// policies and the anonymous token.
	Enabled bool
	// InitialManagement is acl.tokens.initial_management: the leader writes
	// a management token with this secret, through a bootstrap while one is
	// allowed.
	InitialManagement string
	// AgentToken is the secret this server's own registration carries
	// when it is sent to the leader as a request (a follower without
	// gossip, selfreg.go): the agent's acl.tokens.agent, else its default,
	// else anonymous, read at each send so a token set later through the
	// API is used from the next one. nil sends none, which the leader
	// decides as anonymous.
	AgentToken func() string
}

// Config builds a Server. Everything a test or the simulator may want to
// replace (time, transport, stores, IDs, the HTTP round-tripper) is a field;
// zero values get production defaults in NewServer.
type Config struct {
	// NodeName is this server's catalog node.
	NodeName string
	// NodeID is this node's UUID, which its catalog node carries (S62)
	// and which is its raft server ID, as in Consul; empty registers a
	// node without one and names the raft server by NodeName.
	NodeID string
	// HTTPAddr is the host:port of this server's HTTP API.
	HTTPAddr string
	// NodeAddr is the Address of this node's catalog entry: the IP other
	// agents reach it at, as Consul records a node's advertise address.
	// Empty means HTTPAddr's host.
	NodeAddr string

	// Clock drives TTL timers, lock-delay, failure detection and retries.
	// Default SystemClock.
	Clock clock.Clock
	// Logger defaults to a logger that discards everything.
	Logger hclog.Logger

	// Dev runs a single in-memory node that bootstraps itself; stores and
	// transport default to in-memory ones and raft timings are shortened.
	Dev bool
	// DataDir holds the durable raft log, stable store and snapshots when
	// not Dev and the stores are not injected.
	DataDir string
	// Disk is the file system DataDir is on; nil is the real disk. The
	// simulator gives an in-memory one (sim/simdisk) that can lose power.
	// On any disk but disk.OS, raft-wal's metadata and the snapshots are
	// files of tenure's own rather than BoltDB and raft's file store.
	Disk disk.FS
	// LogSegmentSize, if set, replaces raft-wal's 64 MiB log segments; the
	// simulator uses small ones so that short runs rotate them.
	LogSegmentSize int
	// RaftAddr is the server port's host:port when Transport is nil: raft
	// and forwarded requests (package rpc) share it, and it is the address
	// advertised to peers. ServerListener, if set, is that port already
	// open (RaftAddr then defaults to its address). In Dev, raft stays in
	// memory and the port, if either is set, takes forwarded requests only
	// (client agents of a dev server send theirs there).
	RaftAddr       string
	ServerListener net.Listener
	// Dial connects to other servers' ports, for raft and for forwarded
	// requests. Default rpc.DialTCP; the simulator gives its network's.
	// With outgoing TLS on, the agent passes one that is TLS already
	// (rpc.TLSDial).
	Dial rpc.Dial
	// PortTLS, if set, is the server port's TLS for the connections it
	// accepts (tls.internal_rpc); nil takes plain connections only.
	PortTLS *rpc.PortTLS

	// Transport, LogStore, StableStore and SnapshotStore replace the
	// defaults (the simulator injects in-memory ones and its own network).
	// An injected transport is closed by raft on Shutdown; injected stores
	// are not closed.
	Transport     raft.Transport
	LogStore      raft.LogStore
	StableStore   raft.StableStore
	SnapshotStore raft.SnapshotStore
	// tuneRaft, if set, adjusts the raft configuration after tenure's defaults
	// (LocalID, Logger and, in Dev, faster timings) are filled in.
	tuneRaft func(*raft.Config)
	// RaftRand, if set, returns the source of one named use of randomness
	// in raft (its random timeouts: raft.Rand*), so that the simulator can
	// seed one per node and use and no draw depends on goroutine order.
	// Nil keeps raft's global math/rand. It needs tenure's patched raft
	// (third_party/raft, DESIGN.md "Patched dependencies").
	RaftRand func(use string) *rand.Rand

	// Peers is the full server list, this node included. A server with no
	// raft state bootstraps exactly this configuration, so starting every
	// server with the same list is the equivalent of Consul's
	// -bootstrap-expect N. Ignored when raft state exists. Dev uses itself.
	Peers []Peer

	// TTLMultiplier scales a session's TTL into its deadline (S19); at least
	// 1, so that TTL stays a lower bound (S18). Default model.DefaultTTLMultiplier.
	TTLMultiplier float64
	// NewID returns fresh session IDs; default random UUIDs. Calls are
	// serialised; an ID that a live session already has is skipped.
	NewID func() string
	// Forward carries this server's own requests to the leader's server
	// port (self-registration from a follower). Default: a private
	// rpc.Pool, closed on Shutdown.
	Forward rpc.Forwarder

	// ReapWindow is how old a deletion must be before the leader reaps it
	// (S52); ReapInterval is how often it looks. Defaults: 15 minutes and
	// 30 s, Consul's tombstone TTL and granularity. A window under 61 s can
	// reap a deleted key's lock-delay mark while the delay still runs; only
	// tests use one.
	ReapWindow, ReapInterval time.Duration
	// CoordinateUpdatePeriod is how long the leader collects network
	// coordinates before it writes them (coordinates.go, S89); default
	// 5 s, Consul's coordinate_update_period.
	CoordinateUpdatePeriod time.Duration
	// registerRetry is the first delay before self-registration is retried after
	// a failure; it doubles up to 16× this value. Default 250ms.
	registerRetry time.Duration
	// retryBackoff is the first delay before the leader retries a TTL
	// destroy or a serfHealth update that failed; it doubles up to 32×.
	// Default 500ms.
	retryBackoff time.Duration

	// Apply, if set, replaces st.Apply in the state machine and returns the
	// state to keep (st itself, or a replacement built with
	// model.RestoreUnchecked). It is a test seam only, for deliberately
	// broken servers that the simulator's checks must catch; a real server
	// leaves it nil.
	Apply fsm.ApplyFunc

	// ACL, when Enabled, makes every new leader write the ACL records
	// Consul's leader writes (S87); see ACLConfig.
	ACL ACLConfig

	// Membership, if set, is this server's gossip pool; see Membership.
	Membership Membership
	// AnnounceLeader, if set, is called once each term of leadership is
	// established (its barrier passed); it must not block. The agent
	// broadcasts Consul's new-leader gossip event with it, on which every
	// agent runs a full anti-entropy sync soon.
	AnnounceLeader func()
	// BootstrapExpect, with a Membership and no Peers, forms the cluster
	// once this many servers have joined the pool (-bootstrap-expect); 0
	// waits to be added to an existing cluster.
	BootstrapExpect int

	// Observe, if set, is told every change of the state machine, in
	// order, on the goroutine that applies them: one call per applied raft
	// entry and one per snapshot restore. It is how the simulator sees
	// exactly what each index did; it must not block or call back into
	// the server. A real server leaves it nil (each call costs a state
	// copy).
	Observe func(fsm.Change)
	// Fatal, if set, is told once when this server must stop because its
	// raft log could not be made durable (a failed fsync, on a leader or a
	// follower), instead of the panic that ends the process; the server
	// then applies nothing more. The simulator crashes the node there. A
	// real server leaves it nil.
	Fatal func(error)
}

// Peer is one raft server: its node name, its raft server ID (default the
// name) and its raft address.
type Peer struct {
	Name     string
	ID       string
	RaftAddr string
}

// raftID is the raft server ID p is bootstrapped under.
func (p Peer) raftID() string {
	if p.ID != "" {
		return p.ID
	}
	return p.Name
}

// raftID is the raft server ID this server takes in a configuration it
// forms or joins: its node ID, or its name when it has none.
func (c Config) raftID() string {
	if c.NodeID != "" {
		return c.NodeID
	}
	return c.NodeName
}

// bootstrapID is the raft server ID this server starts with on empty
// stores: its own entry's in Peers, which it bootstraps, else raftID.
func (c Config) bootstrapID() string {
	for _, p := range c.Peers {
		if p.Name == c.NodeName {
			return p.raftID()
		}
	}
	return c.raftID()
}

// withDefaults validates c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.NodeName == "" {
		return c, errors.New("config: NodeName is required")
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.ReapWindow == 0 {
		c.ReapWindow = 15 * time.Minute
	}
	if c.ReapInterval == 0 {
		c.ReapInterval = 30 * time.Second
	}
	if c.ReapWindow < 0 || c.ReapInterval < 0 {
		return c, fmt.Errorf("config: ReapWindow %v and ReapInterval %v must be positive", c.ReapWindow, c.ReapInterval)
	}
	if c.TTLMultiplier == 0 {
		c.TTLMultiplier = model.DefaultTTLMultiplier
	}
	if c.TTLMultiplier < 1 {
		return c, fmt.Errorf("config: TTLMultiplier %v is below 1, which would expire sessions before their TTL (S18)", c.TTLMultiplier)
	}
	if c.NewID == nil {
		c.NewID = randomUUID
	}
	if c.Dial == nil {
		c.Dial = rpc.DialTCP
	}
	if c.registerRetry == 0 {
		c.registerRetry = 250 * time.Millisecond
	}
	if c.retryBackoff == 0 {
		c.retryBackoff = 500 * time.Millisecond
	}
	if c.registerRetry < 0 || c.retryBackoff < 0 {
		return c, errors.New("config: durations must not be negative")
	}
	if c.ServerListener != nil && c.RaftAddr == "" {
		c.RaftAddr = c.ServerListener.Addr().String()
	}
	if c.Dev {
		// The in-memory transport's address is what /v1/status/leader and
		// /v1/status/peers report: the advertised server address when
		// there is one, as Consul's dev agent reports 127.0.0.1:8300.
		addr := c.RaftAddr
		if addr == "" {
			addr = c.NodeName
		}
		c.Peers = []Peer{{Name: c.NodeName, ID: c.NodeID, RaftAddr: addr}}
	}
	if !c.Dev {
		if c.Transport == nil && c.RaftAddr == "" && c.ServerListener == nil {
			return c, errors.New("config: RaftAddr (or an injected Transport) is required outside dev mode")
		}
		needDisk := c.LogStore == nil || c.StableStore == nil || c.SnapshotStore == nil
		if needDisk && c.DataDir == "" {
			return c, errors.New("config: DataDir (or injected stores) is required outside dev mode")
		}
	}
	seen := map[string]bool{}
	ids := map[string]bool{}
	self := false
	for _, p := range c.Peers {
		if p.Name == "" || p.RaftAddr == "" {
			return c, fmt.Errorf("config: peer %+v needs a name and a raft address", p)
		}
		if seen[p.Name] || ids[p.raftID()] {
			return c, fmt.Errorf("config: peer %q listed twice", p.Name)
		}
		seen[p.Name], ids[p.raftID()] = true, true
		self = self || p.Name == c.NodeName
	}
	if len(c.Peers) > 0 && !self {
		return c, fmt.Errorf("config: peers do not include this node %q", c.NodeName)
	}
	return c, nil
}

// raftConfig is hashicorp/raft's configuration for this server.
func (c Config) raftConfig() (*raft.Config, error) {
	rc := raft.DefaultConfig()
	// On stores that hold a configuration already, NewServer may start
	// raft under another ID (startID).
	rc.LocalID = raft.ServerID(c.bootstrapID())
	rc.Logger = c.Logger.Named("raft")
	rc.Rand = c.RaftRand
	// A leader that removes its own entry to be added back under its node
	// ID (raftid.go) must go on as a follower, not shut raft down.
	rc.ShutdownOnRemove = false
	// Log compaction bounds the disk (DESIGN.md, "Disk bound"): a snapshot
	// every 16384 entries or 30 s, whichever first, keeps the log between
	// snapshots short; 10240 trailing entries let a follower that missed a
	// few seconds catch up from the log instead of a full snapshot install.
	// These are Consul's server defaults.
	rc.SnapshotThreshold = 16384
	rc.SnapshotInterval = 30 * time.Second
	rc.TrailingLogs = 10240
	if c.Dev {
		// One voter elects itself as soon as its heartbeat timeout passes;
		// Consul's dev mode shortens the same timings.
		rc.HeartbeatTimeout = 100 * time.Millisecond
		rc.ElectionTimeout = 100 * time.Millisecond
		rc.LeaderLeaseTimeout = 100 * time.Millisecond
		rc.CommitTimeout = 5 * time.Millisecond
	}
	if c.tuneRaft != nil {
		c.tuneRaft(rc)
	}
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("config: raft: %w", err)
	}
	return rc, nil
}

func randomUUID() string {
	id, err := uuid.GenerateUUID()
	if err != nil {
		// crypto/rand does not fail on supported platforms; if it does,
		// no session can be created safely.
		panic(fmt.Sprintf("generate session ID: %v", err))
	}
	return id
}

// nodeAddr is what the catalog records as this node's Address (NodeAddr).
func (c Config) nodeAddr() string {
	if c.NodeAddr != "" {
		return c.NodeAddr
	}
	if host, _, err := net.SplitHostPort(c.HTTPAddr); err == nil {
		return host
	}
	return c.HTTPAddr
}
