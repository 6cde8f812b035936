package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/impl/clock"
	"github.com/tenurekv/tenure/impl/internal/fsm"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/impl/internal/raftlog"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// errShutdown is returned by calls made while or after the server shuts down.
var errShutdown = errors.New("server is shutting down")

// Server is one tenure server: the model as a raft FSM plus the leader-only
// memory Consul keeps beside raft (TTL timers, failure detection) and each
// server's own lock-delay memory. It implements Backend.
type Server struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock

	leader *leader.Core
	fsm    *fsm.FSM
	raft   *raft.Raft
	stores *raftlog.Stores
	// forward carries self-registration to the leader; ownPool is it when
	// this server made it (and closes it).
	forward rpc.Forwarder
	ownPool *rpc.Pool
	// rpc serves forwarded requests on the server port, which demux
	// accepts; demux is nil when raft's transport was injected.
	rpc   *rpc.Server
	demux *rpc.Demux

	lead leadership
	// coords are the network coordinates the leader has yet to write.
	coords coordQueue
	// deferSyncs: the leader's log fsyncs are deferred behind the apply
	// gate and the commit clamp (raftlog.LogSync).
	deferSyncs bool

	// raftID is the raft server ID raft runs under (raftid.go), under
	// idMu; raftIDKick wakes followRaftID (buffered 1).
	idMu       sync.Mutex
	raftID     string
	raftIDKick chan struct{}

	registerKick chan struct{} // wakes self-registration (buffered 1)
	registered   chan struct{} // closed once this node is registered and passing
	// bootstrapWake is poked at every membership change while the server
	// waits to form or join a cluster (bootstrapLoop).
	bootstrapWake chan struct{}
	regOnce       sync.Once

	shutdownCh   chan struct{}
	raftDone     chan struct{} // closed once raft has shut down
	shutdownOnce sync.Once
	fatalOnce    sync.Once
	shutdownErr  error
	goMu         sync.Mutex
	closing      bool
	wg           sync.WaitGroup
}

var _ Backend = (*Server)(nil)

// NewServer builds and starts a server. It bootstraps cfg.Peers if the stores
// hold no raft state, then joins the election; call Shutdown to stop it. It
// owns cfg.ServerListener: on error, that is closed too.
func NewServer(cfg Config) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil && cfg.ServerListener != nil {
		// Closed already if the port was opened; a second close only fails.
		_ = cfg.ServerListener.Close()
	}
	return s, err
}

func newServer(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rc, err := cfg.raftConfig()
	if err != nil {
		return nil, err
	}
	st, err := raftlog.Open(raftlog.Config{DataDir: cfg.DataDir, Dev: cfg.Dev, Logger: cfg.Logger,
		Disk: cfg.Disk, SegmentSize: cfg.LogSegmentSize,
		LogStore: cfg.LogStore, StableStore: cfg.StableStore, SnapshotStore: cfg.SnapshotStore})
	if err != nil {
		return nil, err
	}
	rpcSrv := rpc.NewServer(cfg.Logger.Named("rpc"))
	trans, demux, err := openTransport(cfg, rpcSrv)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	// The leader defers its log fsyncs only where the commit index it sends
	// can be held back to what is on its disk (raftlog.LogSync).
	var deferSyncs bool
	if nt, ok := trans.(*raft.NetworkTransport); ok && st.Sync != nil {
		trans = raftlog.ClampCommits(nt, st.Sync)
		deferSyncs = true
	}
	s := &Server{
		cfg:           cfg,
		logger:        cfg.Logger,
		clock:         cfg.Clock,
		stores:        st,
		forward:       cfg.Forward,
		rpc:           rpcSrv,
		demux:         demux,
		raftIDKick:    make(chan struct{}, 1),
		registerKick:  make(chan struct{}, 1),
		registered:    make(chan struct{}),
		bootstrapWake: make(chan struct{}, 1),
		shutdownCh:    make(chan struct{}),
		raftDone:      make(chan struct{}),
	}
	if s.forward == nil {
		s.ownPool = rpc.NewPool(rpc.PoolConfig{Dial: cfg.Dial, Logger: cfg.Logger.Named("rpc")})
		s.forward = s.ownPool
	}
	s.lead.changed = make(chan struct{})
	s.leader = leader.New(leader.Config{
		Clock:         cfg.Clock,
		TTLMultiplier: cfg.TTLMultiplier,
		NewID:         cfg.NewID,
		Read:          func(fn func(*model.State)) { s.fsm.Read(fn) },
		Propose:       s.proposeCommand,
		Confirm:       s.confirmLeadership,
		Expire:        s.sessionsExpired,
		WatchKey:      func(key string) (<-chan struct{}, func()) { return s.fsm.WatchKey(key) },
	})
	fo := fsm.Options{Apply: cfg.Apply, Observe: cfg.Observe, Fatal: s.fatal}
	if cfg.NodeID != "" {
		fo.ConfigurationChanged = s.kickRaftID
	}
	if st.Sync != nil {
		fo.AwaitDurable = st.Sync.Await
	}
	s.fsm = fsm.New(s.leader, fo)

	if err := bootstrapIfNew(cfg, rc, st, trans); err != nil {
		return nil, errors.Join(err, closeTransport(trans), s.closePort(), st.Close())
	}
	if rc.LocalID, err = startID(cfg, rc, st); err != nil {
		return nil, errors.Join(err, closeTransport(trans), s.closePort(), st.Close())
	}
	s.raftID = string(rc.LocalID)
	r, err := raft.NewRaft(rc, s.fsm, st.Logs, stopOnStableError{StableStore: st.Stable, s: s}, st.Snaps, trans)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start raft: %w", err), closeTransport(trans), s.closePort(), st.Close())
	}
	s.raft = r
	s.deferSyncs = deferSyncs
	if deferSyncs {
		st.Sync.SetLeader(func() bool { return r.State() == raft.Leader })
	}

	s.goTracked(s.monitorLeadership)
	if st.Sync != nil {
		s.goTracked(func() { s.watchLogSync(st.Sync.Failed(), st.Sync.Err) })
	}
	s.goTracked(s.registerLoop)
	if cfg.NodeID != "" {
		s.goTracked(s.followRaftID)
		s.kickRaftID()
	}
	if cfg.Membership != nil {
		s.goTracked(s.consumeMembership)
		s.goTracked(s.bootstrapLoop)
	}
	return s, nil
}

// openTransport is raft's transport and, when this server opens its own
// server port, the port's demultiplexer (nil otherwise).
func openTransport(cfg Config, srv *rpc.Server) (raft.Transport, *rpc.Demux, error) {
	switch {
	case cfg.Transport != nil:
		return cfg.Transport, nil, nil
	case cfg.Dev:
		_, t := raft.NewInmemTransport(raft.ServerAddress(cfg.Peers[0].RaftAddr))
		if cfg.ServerListener == nil && cfg.RaftAddr == "" {
			return t, nil, nil
		}
		ln, err := serverListener(cfg)
		if err != nil {
			return nil, nil, err
		}
		return t, rpc.NewDemux(ln, srv, nil, cfg.PortTLS, cfg.Logger.Named("rpc")), nil
	}
	ln, err := serverListener(cfg)
	if err != nil {
		return nil, nil, err
	}
	return openServerPort(ln, srv, cfg.Dial, cfg.PortTLS, cfg.Logger)
}

func serverListener(cfg Config) (net.Listener, error) {
	if cfg.ServerListener != nil {
		return cfg.ServerListener, nil
	}
	ln, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("server port: listen on %s: %w", cfg.RaftAddr, err)
	}
	return ln, nil
}

// ServeForwarded sets the handler of the requests other servers and client
// agents forward to this server's port: its HTTP API, which is built on
// the server and so after it. Before, they are answered 500.
func (s *Server) ServeForwarded(h http.Handler) { s.rpc.SetHandler(h) }

// closePort closes the server port and ends the forwarded requests in
// flight; with no port of its own, the rpc server alone.
func (s *Server) closePort() error {
	if s.demux != nil {
		return s.demux.Close()
	}
	return s.rpc.Close()
}

func closeTransport(t raft.Transport) error {
	if c, ok := t.(raft.WithClose); ok {
		if err := c.Close(); err != nil {
			return fmt.Errorf("close raft transport: %w", err)
		}
	}
	return nil
}

// bootstrapIfNew writes the initial configuration into empty stores.
func bootstrapIfNew(cfg Config, rc *raft.Config, st *raftlog.Stores, trans raft.Transport) error {
	if len(cfg.Peers) == 0 {
		return nil
	}
	has, err := raft.HasExistingState(st.Logs, st.Stable, st.Snaps)
	if err != nil {
		return fmt.Errorf("inspect raft state: %w", err)
	}
	if has {
		return nil
	}
	var conf raft.Configuration
	for _, p := range cfg.Peers {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(p.raftID()), Address: raft.ServerAddress(p.RaftAddr),
		})
	}
	if err := raft.BootstrapCluster(rc, st.Logs, st.Stable, st.Snaps, trans, conf); err != nil {
		return fmt.Errorf("bootstrap raft: %w", err)
	}
	return nil
}

// goTracked runs f in a goroutine that Shutdown waits for; once shutdown has
// begun it runs nothing.
func (s *Server) goTracked(f func()) bool {
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// Shutdown stops raft, every goroutine and timer of this server, and closes
// the stores it opened. It is safe to call more than once.
func (s *Server) Shutdown() error {
	s.shutdownOnce.Do(func() {
		close(s.shutdownCh)
		// Forwarded requests end first: they may wait on raft.
		portErr := s.closePort()
		err := s.raft.Shutdown().Error()
		close(s.raftDone)
		s.goMu.Lock()
		s.closing = true
		s.goMu.Unlock()
		s.wg.Wait()
		s.leader.EndTerm()
		if s.ownPool != nil {
			portErr = errors.Join(portErr, s.ownPool.Close())
		}
		if err != nil {
			err = fmt.Errorf("shut down raft: %w", err)
		}
		if portErr != nil {
			portErr = fmt.Errorf("close server port: %w", portErr)
		}
		s.shutdownErr = errors.Join(err, portErr, s.stores.Close())
	})
	return s.shutdownErr
}

// Raft exposes the raft instance, for tests and the simulator's checks.
func (s *Server) Raft() *raft.Raft { return s.raft }

// Registered is closed once this server has seen its own node registered
// with a passing serfHealth check (S47).
func (s *Server) Registered() <-chan struct{} { return s.registered }

// NodeAddr is the Address this server's catalog node is registered with
// (Config.NodeAddr).
func (s *Server) NodeAddr() string { return s.cfg.nodeAddr() }

// sleep waits d on the server's clock; false if stop or shutdown came first.
func (s *Server) sleep(d time.Duration, stop <-chan struct{}) bool {
	done := make(chan struct{})
	t := s.clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-stop:
		return false
	case <-s.shutdownCh:
		return false
	}
}
