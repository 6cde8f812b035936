package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
)

// PoolConfig configures a Pool. The zero value dials TCP and multiplexes.
type PoolConfig struct {
	// Dial opens a connection to a server port; default TCP with a 10 s
	// timeout. The simulator passes its network's dialer.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Single sends each request on a connection of its own (ProtoSingle)
	// instead of a stream of one shared yamux session per server. The
	// simulator needs it: yamux cannot run inside synctest bubbles (see
	// yamuxConfig), and a fresh connection per request keeps which request
	// travels where independent of goroutine scheduling.
	Single bool
	Logger hclog.Logger
}

// Pool forwards requests to servers: one yamux session per server address,
// dialled on first use, shared by every caller and replaced once it dies;
// each request is a stream of its own.
type Pool struct {
	cfg PoolConfig

	mu       sync.Mutex
	closed   bool
	sessions map[string]*poolEntry
}

// poolEntry is one server's session; lock (a one-slot semaphore, so that a
// waiter can give up with its context) serialises dialling it.
type poolEntry struct {
	lock chan struct{}
	sess *yamux.Session
}

// ErrPoolClosed is returned by Forward after Close.
var ErrPoolClosed = errors.New("rpc: pool closed")

// NewPool returns an empty pool.
func NewPool(cfg PoolConfig) *Pool {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	return &Pool{cfg: cfg, sessions: map[string]*poolEntry{}}
}

// Forward implements Forwarder. When ctx ends first, the stream is closed,
// which ends the request's context on the server, and Forward returns
// ctx's error.
func (p *Pool) Forward(ctx context.Context, addr string, req *Request) (*Response, error) {
	head, err := EncodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	conn, err := p.open(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() {
		// Close tells the server; the deadline ends our own read, which
		// a yamux stream keeps open after a local close.
		_ = conn.Close()
		_ = conn.SetReadDeadline(time.Now())
	})
	defer stop()
	if err := writeFrame(conn, head, req.Body); err != nil {
		return nil, p.failed(ctx, addr, err)
	}
	payload, err := readFrame(conn, maxResponseFrame)
	if err != nil {
		return nil, p.failed(ctx, addr, err)
	}
	resp, err := DecodeResponse(payload)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	return resp, nil
}

// failed is the error of an exchange that broke: the caller's own if it
// gave up.
func (p *Pool) failed(ctx context.Context, addr string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("forward to %s: %w", addr, cerr)
	}
	return fmt.Errorf("forward to %s: %w", addr, err)
}

// open is a connection for one request: a new stream of addr's session, or
// with Single a new connection.
func (p *Pool) open(ctx context.Context, addr string) (net.Conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if p.cfg.Single {
		p.mu.Unlock()
		return p.dial(ctx, addr, ProtoSingle)
	}
	e := p.sessions[addr]
	if e == nil {
		e = &poolEntry{lock: make(chan struct{}, 1)}
		p.sessions[addr] = e
	}
	p.mu.Unlock()
	// A session that died since its last use (its server restarted) is
	// found out by OpenStream at the latest; one fresh session is tried
	// then. Nothing was sent on the failed one, so trying again is safe.
	var errs []error
	for range 2 {
		sess, err := p.sessionOf(ctx, addr, e)
		if err != nil {
			return nil, errors.Join(append(errs, err)...)
		}
		st, err := sess.OpenStream()
		if err == nil {
			return st, nil
		}
		errs = append(errs, fmt.Errorf("open stream: %w", err))
		p.drop(e, sess)
	}
	return nil, errors.Join(errs...)
}

// sessionOf is e's live session, dialled if there is none. Only dialling
// holds e's lock: streams are opened outside it, so a slow server delays
// no one waiting for another's session.
func (p *Pool) sessionOf(ctx context.Context, addr string, e *poolEntry) (*yamux.Session, error) {
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.lock }()
	if e.sess != nil && !e.sess.IsClosed() {
		return e.sess, nil
	}
	sess, err := p.session(ctx, addr)
	if err != nil {
		return nil, err
	}
	if !p.keep(addr, e, sess) {
		return nil, ErrPoolClosed
	}
	return sess, nil
}

// drop closes sess and forgets it, unless another caller replaced it.
func (p *Pool) drop(e *poolEntry, sess *yamux.Session) {
	_ = sess.Close()
	e.lock <- struct{}{}
	if e.sess == sess {
		e.sess = nil
	}
	<-e.lock
}

// keep installs sess as e's session unless the pool closed meanwhile (then
// sess is closed).
func (p *Pool) keep(addr string, e *poolEntry, sess *yamux.Session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = sess.Close()
		return false
	}
	e.sess = sess
	p.cfg.Logger.Debug("rpc: new session", "server", addr)
	return true
}

func (p *Pool) session(ctx context.Context, addr string) (*yamux.Session, error) {
	conn, err := p.dial(ctx, addr, ProtoMux)
	if err != nil {
		return nil, err
	}
	sess, err := yamux.Client(conn, yamuxConfig(p.cfg.Logger))
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("yamux session: %w", err)
	}
	return sess, nil
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

// Close closes every session (their requests in flight fail) and makes
// later Forwards fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	sessions := p.sessions
	p.sessions = map[string]*poolEntry{}
	p.mu.Unlock()
	var errs []error
	for _, e := range sessions {
		// Wait for a dial in progress, which then sees the pool closed.
		e.lock <- struct{}{}
		if e.sess != nil {
			errs = append(errs, e.sess.Close())
		}
		<-e.lock
	}
	return errors.Join(errs...)
}
