package simnet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// Transport is one node's raft.Transport on the simulated network. It also
// implements raft.WithPreVote and raft.WithClose. Pipelining is not supported
// (raft falls back to one AppendEntries at a time per follower).
type Transport struct {
	n        *Network
	addr     raft.ServerAddress
	node     string
	consumer chan raft.RPC
	done     chan struct{} // closed by Close

	// Guarded by n.mu.
	inbox     []*request
	wake      chan struct{} // closed and replaced when inbox grows
	closed    bool
	heartbeat func(raft.RPC)
}

var (
	_ raft.Transport   = (*Transport)(nil)
	_ raft.WithPreVote = (*Transport)(nil)
	_ raft.WithClose   = (*Transport)(nil)
)

// request is an RPC that reached its target, waiting for the target's raft.
type request struct {
	from string
	cmd  any
	data []byte // InstallSnapshot payload
	call *call
}

// call is the caller's side of one RPC.
type call struct {
	reply chan raft.RPCResponse // capacity 1
	state int                   // guarded by n.mu
}

const (
	callWaiting = iota
	callReplied
	callAbandoned
)

// NewTransport registers a transport at addr (node = host part of addr). A
// closed transport's address can be reused, which models a restarted node.
func (n *Network) NewTransport(addr raft.ServerAddress) (*Transport, error) {
	if addr == "" {
		return nil, errors.New("simnet: NewTransport: empty address")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrNetworkClosed
	}
	if _, ok := n.transports[addr]; ok {
		return nil, fmt.Errorf("simnet: transport %q already open", addr)
	}
	t := &Transport{
		n:        n,
		addr:     addr,
		node:     nodeOf(string(addr)),
		consumer: make(chan raft.RPC),
		done:     make(chan struct{}),
		wake:     make(chan struct{}),
	}
	n.transports[addr] = t
	go t.feed()
	return t, nil
}

// Consumer implements raft.Transport.
func (t *Transport) Consumer() <-chan raft.RPC { return t.consumer }

// LocalAddr implements raft.Transport.
func (t *Transport) LocalAddr() raft.ServerAddress { return t.addr }

// AppendEntriesPipeline implements raft.Transport; pipelining is unsupported.
func (t *Transport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// EncodePeer implements raft.Transport.
func (t *Transport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte { return []byte(addr) }

// DecodePeer implements raft.Transport.
func (t *Transport) DecodePeer(b []byte) raft.ServerAddress { return raft.ServerAddress(b) }

// SetHeartbeatHandler implements raft.Transport: heartbeats bypass the
// consumer channel, as with raft's NetworkTransport.
func (t *Transport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.n.mu.Lock()
	defer t.n.mu.Unlock()
	t.heartbeat = cb
}

// Close implements raft.WithClose. Queued requests are dropped, calls in
// progress return ErrTransportShutdown, and the address becomes free.
func (t *Transport) Close() error {
	t.n.mu.Lock()
	defer t.n.mu.Unlock()
	t.closeLocked()
	return nil
}

func (t *Transport) closeLocked() {
	if t.closed {
		return
	}
	t.closed = true
	close(t.done)
	if t.n.transports[t.addr] == t {
		delete(t.n.transports, t.addr)
	}
	t.inbox = nil
	t.n.ctlLocked(Conn, t.node, "", "transport closed "+string(t.addr), "")
}

// AppendEntries implements raft.Transport.
func (t *Transport) AppendEntries(_ raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return roundTrip(t, target, args, nil, resp)
}

// RequestVote implements raft.Transport.
func (t *Transport) RequestVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return roundTrip(t, target, args, nil, resp)
}

// RequestPreVote implements raft.WithPreVote.
func (t *Transport) RequestPreVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return roundTrip(t, target, args, nil, resp)
}

// TimeoutNow implements raft.Transport.
func (t *Transport) TimeoutNow(_ raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return roundTrip(t, target, args, nil, resp)
}

// InstallSnapshot implements raft.Transport. The snapshot is read fully before
// sending and travels as one message.
func (t *Transport) InstallSnapshot(_ raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	buf, err := io.ReadAll(io.LimitReader(data, args.Size))
	if err != nil {
		return fmt.Errorf("simnet: reading snapshot for %s: %w", target, err)
	}
	if int64(len(buf)) != args.Size {
		return fmt.Errorf("simnet: snapshot for %s: read %d of %d bytes", target, len(buf), args.Size)
	}
	return roundTrip(t, target, args, buf, resp)
}

// roundTrip sends req to target and copies the typed reply into resp.
func roundTrip[Resp any](t *Transport, target raft.ServerAddress, req any, data []byte, resp *Resp) error {
	out, err := t.call(target, req, data)
	if err != nil {
		return err
	}
	r, ok := out.(*Resp)
	if !ok {
		return fmt.Errorf("simnet: %s from %s: unexpected reply type %T", describe(req), target, out)
	}
	*resp = *r
	return nil
}

// call sends one request and waits for its reply, the RPC timeout, or Close.
func (t *Transport) call(target raft.ServerAddress, req any, data []byte) (any, error) {
	n := t.n
	timeout := n.opts.RPCTimeout
	if _, ok := req.(*raft.InstallSnapshotRequest); ok {
		timeout = n.opts.SnapshotTimeout
	}
	c := &call{reply: make(chan raft.RPCResponse, 1)}
	to := nodeOf(string(target))

	n.mu.Lock()
	if t.closed {
		n.mu.Unlock()
		return nil, ErrTransportShutdown
	}
	in := &request{from: t.node, cmd: cloneMsg(req), data: data, call: c}
	n.routeLocked(&envelope{
		from: t.node, to: to, msg: in.cmd,
		ready: func() string {
			if dst := n.transports[target]; dst == nil {
				return "no transport at " + string(target)
			}
			return ""
		},
		deliver: func() { n.transports[target].enqueueLocked(in) },
	})
	n.mu.Unlock()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-c.reply:
		return r.Response, r.Error
	case <-timer.C:
	case <-t.done:
	}
	// Give up unless the reply raced in at the same instant: checking under
	// the lock makes that race resolve the same way in every run.
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.state == callReplied {
		r := <-c.reply
		return r.Response, r.Error
	}
	c.state = callAbandoned
	if t.closed {
		return nil, ErrTransportShutdown
	}
	n.stats.Timeouts++
	n.ctlLocked(Timeout, t.node, to, describe(req), timeout.String())
	return nil, fmt.Errorf("%s %s->%s after %v: %w", describe(req), t.node, to, timeout, ErrRPCTimeout)
}

func (t *Transport) enqueueLocked(r *request) {
	t.inbox = append(t.inbox, r)
	close(t.wake)
	t.wake = make(chan struct{})
}

// next blocks until a request is queued or the transport closes.
func (t *Transport) next() (*request, func(raft.RPC), bool) {
	n := t.n
	n.mu.Lock()
	for len(t.inbox) == 0 {
		if t.closed {
			n.mu.Unlock()
			return nil, nil, false
		}
		wake := t.wake
		n.mu.Unlock()
		select {
		case <-wake:
		case <-t.done:
		}
		n.mu.Lock()
	}
	r := t.inbox[0]
	t.inbox[0] = nil
	t.inbox = t.inbox[1:]
	hb := t.heartbeat
	n.mu.Unlock()
	return r, hb, true
}

// feed hands delivered requests to raft one at a time, in arrival order, and
// sends each reply back over the network. raft itself serves RPCs one at a
// time, so serialising here adds no head-of-line blocking raft lacks.
func (t *Transport) feed() {
	for {
		r, hb, ok := t.next()
		if !ok {
			return
		}
		respCh := make(chan raft.RPCResponse, 1)
		rpc := raft.RPC{Command: r.cmd, RespChan: respCh}
		if r.data != nil {
			rpc.Reader = bytes.NewReader(r.data)
		}
		if ae, ok := r.cmd.(*raft.AppendEntriesRequest); ok && hb != nil && isHeartbeat(ae) {
			hb(rpc)
		} else {
			select {
			case t.consumer <- rpc:
			case <-t.done:
				return
			}
		}
		select {
		case resp := <-respCh:
			t.sendReply(r, resp)
		case <-t.done:
			return
		}
	}
}

func (t *Transport) sendReply(r *request, resp raft.RPCResponse) {
	n := t.n
	resp.Response = cloneMsg(resp.Response)
	c := r.call
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routeLocked(&envelope{
		from: t.node, to: r.from, msg: replyMsg{resp},
		ready: func() string {
			if c.state == callAbandoned {
				return "caller gave up"
			}
			return ""
		},
		deliver: func() {
			c.state = callReplied
			c.reply <- resp
		},
	})
}

// isHeartbeat mirrors raft's NetworkTransport test for the heartbeat fast path.
func isHeartbeat(r *raft.AppendEntriesRequest) bool {
	leader := r.Addr
	if len(leader) == 0 {
		//lint:ignore SA1019 older raft peers only set the deprecated field
		leader = r.Leader
	}
	return r.Term != 0 && leader != nil && r.PrevLogEntry == 0 && r.PrevLogTerm == 0 &&
		len(r.Entries) == 0 && r.LeaderCommitIndex == 0
}
