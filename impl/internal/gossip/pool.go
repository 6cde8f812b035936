package gossip

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"

	"github.com/tenurekv/tenure/impl/internal/reconcile"
)

// Tags every agent advertises. Role and DC are Consul's, so that a member
// list reads the same.
const (
	TagRole = "role"
	TagDC   = "dc"
	TagID   = "id"   // the node's UUID, which the catalog records (S62)
	TagPort = "port" // servers: the raft (server) port
	// TagExpect is a server's -bootstrap-expect; tagRaft is set once the
	// server belongs to a raft cluster (tenure's stand-in for Consul's
	// asking every server for its peers before bootstrapping).
	TagExpect = "expect"
	tagRaft   = "raft"
	// TagBuild ("<version>:<revision>") and the protocol range TagVsn,
	// TagVsnMin and TagVsnMax are what `consul members` prints in its Build
	// and Protocol columns; tenure speaks Consul's protocol 2.
	TagBuild  = "build"
	TagVsn    = "vsn"
	TagVsnMin = "vsn_min"
	TagVsnMax = "vsn_max"

	RoleServer = "consul"
	RoleClient = "node"
)

// Config is one agent's membership.
type Config struct {
	NodeName string
	// BindAddr and BindPort are where gossip listens (UDP and TCP);
	// AdvertiseAddr and AdvertisePort what other members dial (default: the
	// bind address, which then must not be 0.0.0.0).
	BindAddr      string
	BindPort      int
	AdvertiseAddr string
	AdvertisePort int
	// Tags are the member's tags (TagRole, TagDC, …).
	Tags map[string]string
	// EncryptKey, if set, is the 16, 24 or 32-byte gossip key (-encrypt).
	EncryptKey []byte
	// DataDir, if set, keeps serf's snapshot of the pool in
	// DataDir/serf/local.snapshot, so that a restarted agent rejoins on
	// its own, as Consul's does, and the gossip keyring in
	// DataDir/serf/local.keyring (KeyringFile; setupKeyring says how it
	// and EncryptKey combine).
	DataDir string
	// DisableKeyringFile keeps the keyring in memory only: EncryptKey
	// alone, whatever a keyring file holds (disable_keyring_file).
	DisableKeyringFile bool
	// PlainIncoming and PlainOutgoing are Consul's encrypt_verify_incoming
	// and encrypt_verify_outgoing turned off (both are on by default):
	// with a keyring, accept unencrypted gossip, and send it unencrypted,
	// the steps by which a running cluster turns encryption on.
	PlainIncoming, PlainOutgoing bool
	// Transport replaces memberlist's UDP and TCP transport (the
	// simulator's network).
	Transport memberlist.Transport
	// Timing adjusts memberlist's LAN timings after Consul's defaults are
	// set (tests and dev mode shorten them).
	Timing func(*memberlist.Config)
	// Rand, if set, returns the random source of one named use of
	// randomness in memberlist and serf (memberlist.Rand*, serf.Rand*;
	// the names do not overlap): the simulator seeds one per node and use,
	// so that no draw depends on the order its goroutines run in. Nil
	// keeps the global math/rand. It needs tenure's patched copies of both
	// (third_party/, DESIGN.md "Patched dependencies").
	Rand   func(use string) *rand.Rand
	Logger hclog.Logger
	// ServerUp, if set, is called when a new leader announces itself
	// (AnnounceLeader, on any member) and, on a client agent, when a
	// server joins: the moments Consul's agents run a full anti-entropy
	// sync. It runs on the pool's event goroutine and must not block.
	ServerUp func()
}

// newLeaderEvent is the user event a new leader broadcasts, Consul's name
// for it, with the leader's node name as payload.
const newLeaderEvent = "consul:new-leader"

// Pool is a running membership.
type Pool struct {
	// joinLeave holds one token while a join or a leave runs, so a leave
	// waits for a join under way. Serf tells only the members it knows
	// that it leaves, and a join's members are known only once it returns;
	// a leave sent in between reaches nobody, and the member it joined
	// sees this one fail instead of leave. A channel, not a sync.Mutex: a
	// goroutine parked on a Mutex does not count as blocked for
	// testing/synctest, and the simulator's clock would stop.
	joinLeave chan struct{} // capacity 1

	serf     *serf.Serf
	name     string
	client   bool   // this member is a client agent
	serverUp func() // Config.ServerUp, or nil
	events   chan serf.Event
	changes  chan reconcile.Member
	done     chan struct{}
	logger   hclog.Logger
}

// changeBuffer bounds the changes waiting for the leader; like Consul's, a
// change that does not fit is dropped, and the next full reconcile repairs it.
const changeBuffer = 256

// Start joins no one yet: it starts this agent's membership of a pool of
// one. Join adds it to an existing pool.
func Start(cfg Config) (*Pool, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("gossip: node name is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	ml := memberlist.DefaultLANConfig()
	ml.Name = cfg.NodeName
	ml.BindAddr, ml.BindPort = cfg.BindAddr, cfg.BindPort
	ml.AdvertiseAddr, ml.AdvertisePort = cfg.AdvertiseAddr, cfg.AdvertisePort
	ml.DeadNodeReclaimTime = 30 * time.Second // Consul's override
	ml.Transport = cfg.Transport
	ml.Rand = cfg.Rand
	if len(cfg.EncryptKey) > 0 {
		if err := memberlist.ValidateKey(cfg.EncryptKey); err != nil {
			return nil, fmt.Errorf("gossip: encrypt key: %w", err)
		}
	}
	keyring, keyringFile, err := setupKeyring(cfg, cfg.Logger)
	if err != nil {
		return nil, err
	}
	ml.Keyring = keyring
	ml.GossipVerifyIncoming, ml.GossipVerifyOutgoing = !cfg.PlainIncoming, !cfg.PlainOutgoing
	if cfg.Timing != nil {
		cfg.Timing(ml)
	}
	std := cfg.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	ml.Logger = std

	sc := serf.DefaultConfig()
	sc.NodeName = cfg.NodeName
	sc.Tags = cfg.Tags
	sc.MemberlistConfig = ml
	sc.Rand = cfg.Rand
	sc.Logger = std
	sc.LeavePropagateDelay = 3 * time.Second // Consul's
	// How long a failed member is kept before serf reaps it; Consul's.
	sc.ReconnectTimeout = 72 * time.Hour
	sc.EnableNameConflictResolution = false
	if id := cfg.Tags[TagID]; id != "" {
		sc.Merge = idMerge{name: cfg.NodeName, id: id}
	}
	// serf rewrites the file on every keyring change its members apply.
	sc.KeyringFile = keyringFile
	if cfg.DataDir != "" {
		dir := filepath.Join(cfg.DataDir, "serf")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("gossip: %w", err)
		}
		sc.SnapshotPath = filepath.Join(dir, "local.snapshot")
	}
	p := &Pool{
		name:      cfg.NodeName,
		client:    cfg.Tags[TagRole] == RoleClient,
		serverUp:  cfg.ServerUp,
		joinLeave: make(chan struct{}, 1),
		events:    make(chan serf.Event, 512),
		changes:   make(chan reconcile.Member, changeBuffer),
		done:      make(chan struct{}),
		logger:    cfg.Logger,
	}
	sc.EventCh = p.events
	s, err := serf.Create(sc)
	if err != nil {
		return nil, fmt.Errorf("gossip: start: %w", err)
	}
	p.serf = s
	go p.forward()
	return p, nil
}

// forward turns serf's member events into changes for the leader.
func (p *Pool) forward() {
	defer close(p.done)
	for {
		select {
		case e := <-p.events:
			if ue, ok := e.(serf.UserEvent); ok {
				if ue.Name == newLeaderEvent && p.serverUp != nil {
					p.logger.Info("new leader elected", "leader", string(ue.Payload))
					p.serverUp()
				}
				continue
			}
			me, ok := e.(serf.MemberEvent)
			if !ok {
				continue
			}
			if me.Type == serf.EventMemberJoin && p.client && p.serverUp != nil &&
				slices.ContainsFunc(me.Members, func(m serf.Member) bool { return m.Tags[TagRole] == RoleServer }) {
				p.serverUp()
			}
			for _, m := range me.Members {
				if me.Type == serf.EventMemberReap {
					m.Status = statusReaped
				}
				select {
				case p.changes <- toMember(m):
				default:
					p.logger.Warn("membership change dropped; the next full reconcile repairs it", "member", m.Name)
				}
			}
		case <-p.serf.ShutdownCh():
			return
		}
	}
}

// statusReaped marks a member serf reaped, as Consul does (serf has no
// status of its own for it).
const statusReaped serf.MemberStatus = -1

func toMember(m serf.Member) reconcile.Member {
	// The catalog records a node at its gossip (advertise) address, as
	// Consul does.
	out := reconcile.Member{Name: m.Name, Address: m.Addr.String(), ID: m.Tags[TagID],
		ProtocolMin: m.ProtocolMin, ProtocolMax: m.ProtocolMax, ProtocolCur: m.ProtocolCur}
	// The build tag is "<version>:<revision>" (TagBuild).
	out.Version, _, _ = strings.Cut(m.Tags[TagBuild], ":")
	if m.Tags[TagRole] == RoleServer {
		out.Server = true
		if port := m.Tags[TagPort]; port != "" {
			out.RaftAddr = net.JoinHostPort(m.Addr.String(), port)
		}
		out.Expect, _ = strconv.Atoi(m.Tags[TagExpect])
		out.Bootstrapped = m.Tags[tagRaft] == "1"
	}
	switch m.Status {
	case serf.StatusAlive:
		out.Status = reconcile.Alive
	case serf.StatusLeaving:
		out.Status = reconcile.Leaving
	case serf.StatusLeft:
		out.Status = reconcile.Left
	case serf.StatusFailed:
		out.Status = reconcile.Failed
	case statusReaped:
		out.Status = reconcile.Reaped
	}
	return out
}

// AnnounceLeader broadcasts that this member has just become the leader,
// as Consul's new leader does; every member's ServerUp hears it, this
// one's included.
func (p *Pool) AnnounceLeader() error {
	if err := p.serf.UserEvent(newLeaderEvent, []byte(p.name), false); err != nil {
		return fmt.Errorf("gossip: announce leader: %w", err)
	}
	return nil
}

// Changes delivers every membership change, one member at a time.
func (p *Pool) Changes() <-chan reconcile.Member { return p.changes }

// List is every member serf knows, alive or not (left and failed ones
// until serf reaps them), with what `consul members` shows, sorted by name.
func (p *Pool) List() []Member {
	var out []Member
	for _, m := range p.sorted() {
		out = append(out, fromSerf(m))
	}
	return out
}

// Members is List in the form the leader's reconcile reads (server.Membership).
func (p *Pool) Members() []reconcile.Member {
	var out []reconcile.Member
	for _, m := range p.sorted() {
		out = append(out, toMember(m))
	}
	return out
}

// sorted is serf's members by name. serf lists them in its map's order,
// which Go draws at random on every call: a client agent that asked the
// first server listed whether it was registered asked a different one
// from run to run, and the simulator's seeds did not replay.
func (p *Pool) sorted() []serf.Member {
	ms := p.serf.Members()
	slices.SortFunc(ms, func(a, b serf.Member) int { return strings.Compare(a.Name, b.Name) })
	return ms
}

// Member is a member with what `consul members` shows.
type Member struct {
	reconcile.Member
	IP   string // gossip address
	Port uint16 // gossip port
	Tags map[string]string
	// SerfStatus is serf's own number for the status (1 alive, 2 leaving,
	// 3 left, 4 failed), which /v1/agent/members reports.
	SerfStatus int
	// Protocol and delegate versions: minimum, maximum, current.
	Protocol, Delegate [3]uint8
}

// Addr is the member's gossip host:port.
func (m Member) Addr() string { return net.JoinHostPort(m.IP, strconv.Itoa(int(m.Port))) }

func fromSerf(m serf.Member) Member {
	return Member{Member: toMember(m), IP: m.Addr.String(), Port: m.Port, Tags: m.Tags, SerfStatus: int(m.Status),
		Protocol: [3]uint8{m.ProtocolMin, m.ProtocolMax, m.ProtocolCur},
		Delegate: [3]uint8{m.DelegateMin, m.DelegateMax, m.DelegateCur}}
}

// Local is this agent's own member.
func (p *Pool) Local() Member { return fromSerf(p.serf.LocalMember()) }

// Join contacts the given gossip addresses and returns how many it reached.
func (p *Pool) Join(addrs []string) (int, error) {
	p.joinLeave <- struct{}{}
	defer func() { <-p.joinLeave }()
	n, err := p.serf.Join(addrs, true)
	if err != nil {
		return n, fmt.Errorf("gossip: join %v: %w", addrs, err)
	}
	return n, nil
}

// Leave leaves the pool gracefully: the others see this member as left.
func (p *Pool) Leave() error {
	p.joinLeave <- struct{}{}
	defer func() { <-p.joinLeave }()
	if err := p.serf.Leave(); err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	return nil
}

// ForceLeave marks a failed member as left (prune: forget it at once).
func (p *Pool) ForceLeave(node string, prune bool) error {
	known := false
	for _, m := range p.serf.Members() {
		known = known || m.Name == node
	}
	if !known {
		return fmt.Errorf("agent: No node found with name '%s'", node)
	}
	var err error
	if prune {
		err = p.serf.RemoveFailedNodePrune(node)
	} else {
		err = p.serf.RemoveFailedNode(node)
	}
	if err != nil {
		return fmt.Errorf("gossip: force-leave %s: %w", node, err)
	}
	return nil
}

// MarkBootstrapped tags this server as belonging to a raft cluster
// (server.Membership).
func (p *Pool) MarkBootstrapped() error {
	tags := maps.Clone(p.serf.LocalMember().Tags)
	if tags[tagRaft] == "1" {
		return nil
	}
	tags[tagRaft] = "1"
	if err := p.serf.SetTags(tags); err != nil {
		return fmt.Errorf("gossip: set tags: %w", err)
	}
	return nil
}

// Stats are serf's counters, for /v1/agent/self.
func (p *Pool) Stats() map[string]string { return p.serf.Stats() }

// Shutdown stops gossip without leaving: the others see this member fail.
func (p *Pool) Shutdown() error {
	err := p.serf.Shutdown()
	<-p.done
	if err != nil {
		return fmt.Errorf("gossip: shutdown: %w", err)
	}
	return nil
}

// DevTiming is Consul's -dev gossip timing: 100 ms probes and gossip and a
// suspicion multiplier of 3, so that a dead member is noticed in well under
// a second on loopback.
func DevTiming(c *memberlist.Config) {
	c.ProbeInterval, c.ProbeTimeout, c.GossipInterval = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	c.SuspicionMult = 3
}
