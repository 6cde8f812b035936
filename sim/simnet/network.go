package simnet

import (
	"container/heap"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Link describes one direction between two nodes.
type Link struct {
	Latency  time.Duration // fixed one-way delay
	Jitter   time.Duration // extra delay drawn uniformly from [0, Jitter]
	DropRate float64       // probability in [0, 1] that a message is lost
}

func (l Link) validate() error {
	if l.Latency < 0 || l.Jitter < 0 {
		return fmt.Errorf("simnet: negative latency %v or jitter %v", l.Latency, l.Jitter)
	}
	if math.IsNaN(l.DropRate) || l.DropRate < 0 || l.DropRate > 1 {
		return fmt.Errorf("simnet: drop rate %v not in [0, 1]", l.DropRate)
	}
	return nil
}

// Options configure a Network. Zero durations take the defaults below.
type Options struct {
	Seed uint64 // seeds every PRNG stream of the network
	Link Link   // default for every directed link without an override

	RPCTimeout      time.Duration // a lost raft RPC costs the caller this; default 500ms
	SnapshotTimeout time.Duration // same for InstallSnapshot; default 10*RPCTimeout
	RetransmitDelay time.Duration // delay per lost stream chunk; default 200ms
	MaxRetransmits  int           // consecutive losses that break a connection; default 6

	OnEvent func(Event) // optional trace hook; called under the network lock

	// Settle, if set, is called after a message is delivered when another
	// is to be delivered at the same instant (by the network's timers, or
	// by Resume from a paused node's held ones), with the network
	// unlocked; it should return once all that the delivery set going at
	// this instant has happened (in a synctest bubble: synctest.Wait, with
	// no other caller of Wait at once). Messages due together are then
	// taken one at a time, in delivery order, instead of their receivers'
	// goroutines racing over them all at one virtual instant: a resumed
	// memberlist answered a held ping before or after a held suspicion's
	// refutation, so the ack carried the refutation or not (TestDiverge,
	// seeds 7 and 138).
	Settle func()
}

// Defaults for zero Options fields.
const (
	DefaultRPCTimeout      = 500 * time.Millisecond
	DefaultRetransmitDelay = 200 * time.Millisecond
	DefaultMaxRetransmits  = 6
)

// Errors callers can match with errors.Is.
var (
	ErrRPCTimeout        = errors.New("simnet: rpc timed out")
	ErrRefused           = errors.New("simnet: connection refused")
	ErrConnBroken        = errors.New("simnet: connection broken")
	ErrTransportShutdown = raft.ErrTransportShutdown
	ErrNetworkClosed     = errors.New("simnet: network closed")
)

// Stats counts messages since the network was created.
type Stats struct {
	Sent, Delivered, Dropped, Held, Timeouts uint64
}

type linkKey struct{ from, to string }

// Network is the simulated network. All state is guarded by mu; every
// operation is short and never blocks while holding it.
type Network struct {
	mu    sync.Mutex
	opts  Options
	start time.Time

	links map[linkKey]Link
	// drawAt and draws count the messages with one draw key (msgRandLocked)
	// sent at the instant drawAt.
	drawAt time.Time
	draws  map[drawKey]uint64
	// msgPCG is the source of msgRand, which msgRandLocked reseeds.
	msgPCG   *rand.PCG
	msgRand  *rand.Rand
	cuts     map[linkKey]bool
	isolated map[string]bool
	// down are the nodes switched off (Down): cut like isolated ones, but
	// Heal does not bring them back.
	down   map[string]bool
	paused map[string]*[]*envelope // node -> held messages in order

	transports map[raft.ServerAddress]*Transport
	listeners  map[string]*listener
	packets    map[string]*PacketEndpoint
	pairs      map[*connPair]struct{}
	ports      map[string]int

	queue     envHeap
	linkSeq   map[linkKey]uint64
	nextOrder uint64
	nextPair  uint64
	// draining is set while drain waits for one delivery to settle.
	draining bool
	stats    Stats
	closed   bool
}

// New creates a network. Call it inside the synctest bubble: its timers and
// channels belong to the bubble that creates them.
func New(opts Options) (*Network, error) {
	if err := opts.Link.validate(); err != nil {
		return nil, fmt.Errorf("default link: %w", err)
	}
	if opts.RPCTimeout < 0 || opts.SnapshotTimeout < 0 || opts.RetransmitDelay < 0 || opts.MaxRetransmits < 0 {
		return nil, errors.New("simnet: negative timeout or retransmit option")
	}
	if opts.RPCTimeout == 0 {
		opts.RPCTimeout = DefaultRPCTimeout
	}
	if opts.SnapshotTimeout == 0 {
		opts.SnapshotTimeout = 10 * opts.RPCTimeout
	}
	if opts.RetransmitDelay == 0 {
		opts.RetransmitDelay = DefaultRetransmitDelay
	}
	if opts.MaxRetransmits == 0 {
		opts.MaxRetransmits = DefaultMaxRetransmits
	}
	pcg := rand.NewPCG(0, 0)
	return &Network{
		opts:       opts,
		start:      time.Now(),
		msgPCG:     pcg,
		msgRand:    rand.New(pcg),
		links:      map[linkKey]Link{},
		draws:      map[drawKey]uint64{},
		cuts:       map[linkKey]bool{},
		isolated:   map[string]bool{},
		down:       map[string]bool{},
		paused:     map[string]*[]*envelope{},
		transports: map[raft.ServerAddress]*Transport{},
		listeners:  map[string]*listener{},
		pairs:      map[*connPair]struct{}{},
		ports:      map[string]int{},
		linkSeq:    map[linkKey]uint64{},
	}, nil
}

// Stats returns the message counters.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Elapsed returns the virtual time since the network was created.
func (n *Network) Elapsed() time.Duration { return time.Since(n.start) }

// Close shuts every transport, listener and connection down; later messages
// are dropped. Raft nodes should still be shut down by their owner.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.closed = true
	// Held messages would otherwise wait for a Resume that never comes (and
	// a dial waiting on one would block its goroutine forever).
	for _, node := range slices.Sorted(maps.Keys(n.paused)) {
		held := *n.paused[node]
		delete(n.paused, node)
		for _, e := range held {
			n.loseLocked(e, "network closed")
		}
	}
	for _, a := range slices.Sorted(maps.Keys(n.transports)) {
		n.transports[a].closeLocked()
	}
	for _, a := range slices.Sorted(maps.Keys(n.listeners)) {
		n.listeners[a].closeLocked()
	}
	for _, a := range slices.Sorted(maps.Keys(n.packets)) {
		n.packets[a].closeLocked()
	}
	for _, p := range n.sortedPairsLocked() {
		n.breakPairLocked(p, "network closed")
	}
	n.ctlLocked(Fault, "", "", "close", "")
}

// nodeOf returns the node name of an address: its host part if it has one.
func nodeOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// envelope is one message in flight.
type envelope struct {
	id       uint64 // per-link sequence number: independent of other links' traffic
	order    uint64 // send order, compared only between messages of one link
	at       time.Time
	from, to string
	msg      any     // what travels, for the trace
	stream   *stream // non-nil for connection traffic: reliable and FIFO
	heldOut  bool    // held at the paused sender (else at the paused receiver)

	ready   func() string // optional: "" if deliverable, else why not
	deliver func()
	lost    func(reason string) // optional
}

// stream is the FIFO state of one direction of one connection.
type stream struct{ last time.Time }

type envHeap []*envelope

func (h envHeap) Len() int { return len(h) }
func (h envHeap) Less(i, j int) bool {
	// Ties are broken by link, then by send order on that link, so the
	// order of same-instant arrivals does not depend on how goroutines on
	// different links happened to interleave.
	a, b := h[i], h[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	if a.from != b.from {
		return a.from < b.from
	}
	if a.to != b.to {
		return a.to < b.to
	}
	return a.order < b.order
}
func (h envHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *envHeap) Push(x any)   { *h = append(*h, x.(*envelope)) }
func (h *envHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

func (n *Network) linkLocked(from, to string) Link {
	if l, ok := n.links[linkKey{from, to}]; ok {
		return l
	}
	return n.opts.Link
}

// msgRandLocked returns the PRNG of one message's drop and jitter draws,
// derived from the seed, the directed link, the message's trace description
// (kind and size, raft terms and indexes) and the instant it is sent, and,
// for a message described alike to one the link (for connection traffic:
// its stream) already carried at that instant, how many did. Not the bytes: serf encodes maps (tags, member
// states) in Go's random map order, so equal states differ in bytes. A message's draws therefore do not depend on the order in which
// goroutines sent at one instant: one link's stream, drawn in send order,
// gave a gossip packet and a forwarding dial sent together by one agent
// each other's delays whenever the scheduler swapped them.
func (n *Network) msgRandLocked(e *envelope) *rand.Rand {
	now := time.Now()
	if !now.Equal(n.drawAt) {
		n.drawAt = now
		clear(n.draws)
	}
	// FNV-1a over from, 0, to, 0 and the description, as hash/fnv would
	// hash them, without its allocations or the description's string:
	// this runs for every message.
	k := fnvString(fnvOffset64, e.from)
	k = fnvByte(k, 0)
	k = fnvString(k, e.to)
	k = fnvByte(k, 0)
	var buf [96]byte
	for _, b := range appendDescription(buf[:0], e.msg) {
		k = fnvByte(k, b)
	}
	// Connection traffic counts alike messages per stream, not per link:
	// one stream's writes come in its writer's order, while which of two
	// streams on one link wrote first at an instant is the scheduler's
	// choice (two forwarded requests' equal-sized answers, TestDiverge
	// seed 18). Alike chunks on two streams then draw alike.
	dk := drawKey{k, e.stream}
	dup := n.draws[dk]
	n.draws[dk] = dup + 1
	// One generator, reseeded per message: its draws are made under the
	// lock before the next message's.
	n.msgPCG.Seed(n.opts.Seed, k^uint64(now.UnixNano())*0x9e3779b97f4a7c15^dup*0xbf58476d1ce4e5b9)
	return n.msgRand
}

// FNV-1a, 64 bits (hash/fnv's New64a).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime64 }

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return h
}

// drawKey counts messages described alike at one instant: per link for
// datagrams and RPCs (stream nil), per stream for connection traffic.
type drawKey struct {
	k      uint64
	stream *stream
}

// cutLocked reports whether messages from a to b are currently blocked.
// A node always reaches itself.
func (n *Network) cutLocked(a, b string) bool {
	if a == b {
		return false
	}
	return n.isolated[a] || n.isolated[b] || n.down[a] || n.down[b] || n.cuts[linkKey{a, b}]
}

// routeLocked hands e to the link: it is held, lost, or scheduled to arrive.
func (n *Network) routeLocked(e *envelope) {
	if e.id == 0 {
		k := linkKey{e.from, e.to}
		n.linkSeq[k]++
		e.id = n.linkSeq[k]
	}
	if n.closed {
		n.loseLocked(e, "network closed")
		return
	}
	if held := n.paused[e.from]; held != nil {
		e.heldOut = true
		*held = append(*held, e)
		n.stats.Held++
		n.emitLocked(Hold, e, "sender paused")
		return
	}
	if n.cutLocked(e.from, e.to) {
		n.loseLocked(e, "partition")
		return
	}
	l := n.linkLocked(e.from, e.to)
	r := n.msgRandLocked(e)
	delay := l.Latency
	if l.DropRate > 0 {
		if e.stream == nil {
			if r.Float64() < l.DropRate {
				n.loseLocked(e, "random drop")
				return
			}
		} else {
			for tries := 0; r.Float64() < l.DropRate; tries++ {
				if tries >= n.opts.MaxRetransmits {
					n.loseLocked(e, "retransmit limit")
					return
				}
				delay += n.opts.RetransmitDelay
			}
		}
	}
	if l.Jitter > 0 {
		delay += time.Duration(r.Int64N(int64(l.Jitter) + 1))
	}
	now := time.Now()
	e.at = now.Add(delay)
	if s := e.stream; s != nil {
		if e.at.Before(s.last) {
			e.at = s.last
		}
		s.last = e.at
	}
	n.nextOrder++
	e.order = n.nextOrder
	heap.Push(&n.queue, e)
	n.stats.Sent++
	n.emitLocked(Send, e, "")
	time.AfterFunc(e.at.Sub(now), n.drain)
}

// drain delivers every message whose arrival time has come, in (time, send
// order). Each scheduled timer calls it; extra calls find nothing to do.
//
// With Options.Settle, messages due at one instant are delivered one at a
// time, each settled before the next: a stream's chunks clamped to one
// arrival reached their reader together, and which of a forwarded request
// and its Cancel the server's goroutines acted on first was the
// scheduler's choice (TestDiverge, seeds 22 and 138). Meanwhile draining
// is set and other timers' drains leave the instant to this one.
func (n *Network) drain() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.draining {
		return
	}
	now := time.Now()
	for len(n.queue) > 0 && !n.queue[0].at.After(now) {
		n.arriveLocked(heap.Pop(&n.queue).(*envelope))
		if n.opts.Settle != nil && len(n.queue) > 0 && !n.queue[0].at.After(now) {
			n.draining = true
			n.mu.Unlock()
			n.opts.Settle()
			n.mu.Lock()
			n.draining = false
		}
	}
}

func (n *Network) arriveLocked(e *envelope) {
	if n.closed {
		n.loseLocked(e, "network closed")
		return
	}
	if n.cutLocked(e.from, e.to) {
		n.loseLocked(e, "cut in flight")
		return
	}
	if held := n.paused[e.to]; held != nil {
		e.heldOut = false
		*held = append(*held, e)
		n.stats.Held++
		n.emitLocked(Hold, e, "receiver paused")
		return
	}
	if e.ready != nil {
		if why := e.ready(); why != "" {
			n.loseLocked(e, why)
			return
		}
	}
	n.stats.Delivered++
	n.emitLocked(Deliver, e, "")
	e.deliver()
}

func (n *Network) loseLocked(e *envelope, reason string) {
	n.stats.Dropped++
	n.emitLocked(Drop, e, reason)
	if e.lost != nil {
		e.lost(reason)
	}
}
