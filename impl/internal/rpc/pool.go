package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// PoolConfig configures a Pool. The zero value dials TCP and multiplexes.
type PoolConfig struct {
	// Dial opens a connection to a server port; default TCP with a 10 s
	// timeout. The simulator passes its network's dialer.
	Dial   Dial
	Logger hclog.Logger
}

// Pool forwards requests to servers: per server address connsPerServer
// protoMux connections, each dialled on first use, shared by every caller
// and replaced once it breaks.
type Pool struct {
	cfg PoolConfig

	mu      sync.Mutex
	closed  bool
	servers map[string]*poolServer
	next    atomic.Uint32 // spreads callers over a server's connections
}

// connsPerServer is how many connections a pool keeps to one server;
// callers take them in turn. BenchmarkHop's parallel case on 2 cores, median
// µs per hop over 8 runs each: 1 connection 32.5, 2 connections 28.5,
// 4 connections 24.0 (serial hops cost the same, about 54). One connection
// serialises every answer through one reading goroutine on each side;
// a few let them proceed side by side.
const connsPerServer = 4

// poolServer is one server's connections.
type poolServer struct {
	conns [connsPerServer]poolSlot
}

// poolSlot is one connection; lock (a one-slot semaphore, so that a waiter
// can give up with its context) serialises dialling it.
type poolSlot struct {
	lock chan struct{}
	conn *poolConn
}

// poolConn is a net/rpc client over one connection. slots bounds its calls
// to what the server runs at once, so that the server never stops reading
// a Cancel behind requests it has no room for.
type poolConn struct {
	client *rpc.Client
	codec  *clientCodec
	slots  chan struct{}
	nextID atomic.Uint64
	broken atomic.Bool
}

// errPoolClosed is returned by Forward after Close.
var errPoolClosed = errors.New("rpc: pool closed")

// NewPool returns an empty pool.
func NewPool(cfg PoolConfig) *Pool {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Dial == nil {
		cfg.Dial = DialTCP
	}
	return &Pool{cfg: cfg, servers: map[string]*poolServer{}}
}

// Forward implements Forwarder. When ctx ends first, the server is sent a
// Cancel, which ends the request's context there, and Forward returns
// ctx's error at once.
func (p *Pool) Forward(ctx context.Context, addr string, req *Request) (*Response, error) {
	head, err := encodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	slot, err := p.slot(addr)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	// A connection that broke since its last use (its server restarted)
	// is found out here at the latest, before anything is sent on it: one
	// fresh connection is tried then. net/rpc fails a call with ErrShutdown
	// before writing it when its client has shut down or been closed, and
	// after writing it only when the codec reads a bare io.EOF from a
	// closed client, which ours never returns: so ErrShutdown means not
	// sent, and a write is never applied twice by this retry.
	var errs []error
	for range 2 {
		pc, err := p.connOf(ctx, addr, slot)
		if err != nil {
			return nil, fmt.Errorf("forward to %s: %w", addr, errors.Join(append(errs, err)...))
		}
		resp, err := p.call(ctx, pc, head, req)
		if err == nil {
			return resp, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("forward to %s: %w", addr, cerr)
		}
		if isBroken(err) {
			p.drop(slot, pc)
		}
		if !errors.Is(err, rpc.ErrShutdown) {
			return nil, fmt.Errorf("forward to %s: %w", addr, err)
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("forward to %s: %w", addr, errors.Join(errs...))
}

// call is one Forward.Request on pc.
func (p *Pool) call(ctx context.Context, pc *poolConn, head []byte, req *Request) (*Response, error) {
	select {
	case pc.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	id := pc.nextID.Add(1)
	// The arguments and the answer in one allocation.
	fc := &forwardCall{args: ForwardArgs{id: id, request: req, head: head}}
	// Counted as about to be written only now that it has a slot: a call
	// waiting for one must not hold back the flush of those written.
	pc.codec.ready.Add(1)
	call := pc.client.Go(methodRequest, &fc.args, &fc.resp, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		<-pc.slots
		fc.args = ForwardArgs{} // the answer outlives the call; the request need not
		if call.Error != nil {
			return nil, call.Error
		}
		return &fc.resp, nil
	case <-ctx.Done():
		// Fire and forget: the answers of both calls are read and
		// dropped by the client. The slot is given back after the Cancel
		// is written, so the server reads it before any later request.
		pc.codec.ready.Add(1)
		pc.client.Go(methodCancel, id, nil, make(chan *rpc.Call, 1))
		<-pc.slots
		return nil, ctx.Err()
	}
}

type forwardCall struct {
	args ForwardArgs
	resp Response
}

// slot is one of addr's connection slots, in turn.
func (p *Pool) slot(addr string) (*poolSlot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	s := p.servers[addr]
	if s == nil {
		s = &poolServer{}
		for i := range s.conns {
			s.conns[i].lock = make(chan struct{}, 1)
		}
		p.servers[addr] = s
	}
	return &s.conns[int(p.next.Add(1))%connsPerServer], nil
}

// connOf is slot's live connection, dialled if there is none. Only
// dialling holds the slot's lock, so a slow server delays no one waiting
// for another's connection.
func (p *Pool) connOf(ctx context.Context, addr string, slot *poolSlot) (*poolConn, error) {
	select {
	case slot.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-slot.lock }()
	if pc := slot.conn; pc != nil && !pc.broken.Load() {
		return pc, nil
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errPoolClosed // not worth a dial: a call cut off by Close is retried here
	}
	conn, err := p.dial(ctx, addr, protoMux)
	if err != nil {
		return nil, err
	}
	codec := newClientCodec(conn)
	pc := &poolConn{client: rpc.NewClientWithCodec(codec), codec: codec, slots: make(chan struct{}, maxOutstanding)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = pc.client.Close()
		return nil, errPoolClosed
	}
	slot.conn = pc
	p.cfg.Logger.Debug("rpc: new connection", "server", addr)
	return pc, nil
}

// drop closes pc and forgets it, unless another caller replaced it.
func (p *Pool) drop(slot *poolSlot, pc *poolConn) {
	if pc.broken.Swap(true) {
		return
	}
	_ = pc.client.Close()
	slot.lock <- struct{}{}
	if slot.conn == pc {
		slot.conn = nil
	}
	<-slot.lock
}

func (p *Pool) dial(ctx context.Context, addr string, proto byte) (net.Conn, error) {
	conn, err := p.cfg.Dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	if _, err := conn.Write([]byte{proto}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("dial: %w", err)
	}
	return conn, nil
}

// Close closes every connection (their requests in flight fail) and makes
// later Forwards fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	servers := p.servers
	p.servers = map[string]*poolServer{}
	p.mu.Unlock()
	var errs []error
	for _, s := range servers {
		for i := range s.conns {
			slot := &s.conns[i]
			// Wait for a dial in progress, which then sees the pool closed.
			slot.lock <- struct{}{}
			if pc := slot.conn; pc != nil && !pc.broken.Swap(true) {
				if err := pc.client.Close(); err != nil && !errors.Is(err, rpc.ErrShutdown) {
					errs = append(errs, err)
				}
			}
			<-slot.lock
		}
	}
	return errors.Join(errs...)
}
