// Package agent runs a tenure server with Consul's HTTP API in front of it:
// what `tenure agent` starts, and what tests and the simulator start in
// process.
//
// It is the one way into the server: the server's own packages are
// internal to impl/, and the parts of them that a caller configures or
// reads (ServerConfig, GossipConfig, Change, …) are named here as aliases.
package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/agentcache"
	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// Config is an agent: the server's configuration, where to serve HTTP, and
// how to reach other servers' server ports.
type Config struct {
	// Server configures the raft server. If Server.HTTPAddr is empty it is
	// set to the listener's address.
	Server ServerConfig
	// Listener serves the HTTP API; if nil, the agent listens on
	// Server.HTTPAddr over TCP (port 0 picks a free port, which then
	// becomes Server.HTTPAddr), unless HTTPSListener is set: then it
	// serves HTTPS only, and Server.HTTPAddr defaults to that address.
	Listener net.Listener
	// HTTPSListener, if set, serves the API over HTTPS as well, with TLS's
	// https settings (Consul's ports.https).
	HTTPSListener net.Listener
	// TLS, if set, is the agent's TLS (LoadTLS): HTTPS's, and the server
	// port's both for the connections it accepts and for those this
	// agent opens (Server.Dial and the forwarding pool turn TLS with
	// verify_outgoing).
	TLS *TLS
	// Forward carries requests to other servers' server ports (a follower
	// forwarding to the leader, self-registration); it also becomes
	// Server.Forward and the API's Options.Forward unless those are set.
	// Default: a private rpc.Pool, closed on Shutdown.
	Forward rpc.Forwarder
	// HTTP configures the API; Forward and Logger default as above.
	HTTP HTTPOptions
	// Limits bounds each client connection (timeouts, header size); zero
	// fields take defaults.
	Limits HTTPLimits
	// Gossip, if set, makes the agent a member of a LAN gossip pool: the
	// server then takes its catalog registrations and serfHealth from
	// gossip (Membership) and the membership endpoints answer. Its
	// node name and tags (role, HTTP address, server port) are filled in.
	Gossip *GossipConfig
	// Join lists gossip addresses to join at start; a failure is logged
	// and retried every RetryInterval (default 30 s, Consul's
	// retry_interval) until one succeeds.
	Join          []string
	RetryInterval time.Duration
	// Local configures the agent's own services and checks: the script
	// check policy, check_update_interval, and every random or periodic
	// part of checks and anti-entropy (staggers, intervals), which the
	// simulator sets to seeded sources. Node is filled in.
	Local LocalConfig
	// NodeMeta is the operator's meta for this agent's node (-node-meta),
	// which anti-entropy keeps in the catalog (S63).
	NodeMeta map[string]string
	// NoAgentCache turns the agent cache off (Consul's
	// http_config.use_cache = false): ?cached reads go to the servers.
	NoAgentCache bool
	// Debug serves Go's profiles under /debug/pprof/ (Consul's
	// enable_debug).
	Debug bool
	// Reload re-reads the agent's config files for PUT /v1/agent/reload;
	// nil serves no such endpoint.
	Reload func() error
	// Telemetry, if set (NewTelemetry), is served at /v1/agent/metrics.
	Telemetry *MemSink
	// ACL is the agent's acl block (acl.go); the zero value is ACLs off.
	ACL ACLConfig
	// Coordinates is how the agent sends its network coordinate (S89);
	// the zero value sends with Consul's defaults.
	Coordinates CoordinateConfig
	// AdjustServer, if set, changes the server's configuration once the
	// agent has filled it in (gossip membership, addresses, forwarding),
	// just before the server starts. A test seam for the simulator's
	// deliberately broken servers; the binary leaves it nil.
	AdjustServer func(*ServerConfig)
}

// Agent is a running server and its HTTP API.
type Agent struct {
	// components are the agent's own parts (Components adds the server's).
	components []string
	srv        *server.Server
	ownPool    *rpc.Pool // Config.Forward when the agent made it
	local      *localAgent
	cache      *agentcache.Cache // nil with NoAgentCache
	pool       *gossip.Pool      // nil without gossip
	coordDone  <-chan struct{}   // closed once the coordinate sender stopped
	left       chan struct{}
	api        *apiServers
	addr       string
	cancel     context.CancelFunc // ends every request's context (blocking reads)
	once       sync.Once
	shutdown   error
}

// New starts an agent. On error nothing is left running.
func New(cfg Config) (*Agent, error) {
	httpsTLS, err := cfg.useTLS()
	if err != nil {
		return nil, errors.Join(err, closeAll(cfg.Listener, cfg.HTTPSListener, cfg.Server.ServerListener))
	}
	var ownPool *rpc.Pool
	if cfg.Forward == nil {
		ownPool = rpc.NewPool(rpc.PoolConfig{Dial: cfg.Server.Dial, Logger: logger(cfg.Server.Logger).Named("rpc")})
		cfg.Forward = ownPool
	}
	if cfg.Server.Forward == nil {
		cfg.Server.Forward = cfg.Forward
	}
	if cfg.HTTP.Forward == nil {
		cfg.HTTP.Forward = cfg.Forward
	}
	// closePool also closes the server port, which the server would own
	// had it started: on error nothing is left open.
	closePool := func() error {
		var err error
		if ownPool != nil {
			err = ownPool.Close()
		}
		if cfg.Server.ServerListener != nil {
			_ = cfg.Server.ServerListener.Close()
		}
		return err
	}
	if cfg.HTTP.NodeID == "" {
		cfg.HTTP.NodeID = cfg.Server.NodeID
	}
	logs, httpLogger := agentLogs(cfg.Server.Logger, cfg.HTTP.Logger)
	cfg.HTTP.Logger = httpLogger
	aclOpts, err := cfg.ACL.httpOptions(cfg.Server.DataDir, cfg.HTTP.Datacenter, cfg.Server.NodeName, true)
	if err != nil {
		return nil, errors.Join(err, closePool())
	}
	cfg.HTTP.ACL = aclOpts
	cfg.HTTP.DisableCoordinates = cfg.HTTP.DisableCoordinates || cfg.Coordinates.Disable
	own := cfg.ACL.ownTokens(aclOpts.Tokens)
	cfg.Server.ACL = ServerACL{Enabled: cfg.ACL.Enabled, InitialManagement: cfg.ACL.initialManagement(),
		AgentToken: own.agent}
	ln := cfg.Listener
	switch {
	case ln == nil && cfg.HTTPSListener != nil:
		// HTTPS only (ports.http = -1).
		if cfg.Server.HTTPAddr == "" {
			cfg.Server.HTTPAddr = cfg.HTTPSListener.Addr().String()
		}
	case ln == nil:
		if cfg.Server.HTTPAddr == "" {
			return nil, errors.Join(errors.New("agent: no Listener and no Server.HTTPAddr to listen on"), closePool())
		}
		if ln, err = net.Listen("tcp", cfg.Server.HTTPAddr); err != nil {
			return nil, errors.Join(fmt.Errorf("agent: listen on %s: %w", cfg.Server.HTTPAddr, err), closePool())
		}
		// Port 0 becomes the port actually bound, for HTTPAddr's readers.
		cfg.Server.HTTPAddr = ln.Addr().String()
	}
	if cfg.Server.HTTPAddr == "" {
		cfg.Server.HTTPAddr = ln.Addr().String()
	}
	// closeListeners closes the API's listeners on an error before they
	// serve.
	closeListeners := func() error { return closeAll(ln, cfg.HTTPSListener) }
	if cfg.Server.ServerListener != nil && cfg.Server.RaftAddr == "" {
		// Gossip's port tag tells client agents where the port is.
		cfg.Server.RaftAddr = cfg.Server.ServerListener.Addr().String()
	}
	var (
		pool    *gossip.Pool
		leaving *leavingPool
	)
	left := make(chan struct{})
	up := &serverUp{}
	if cfg.Gossip != nil {
		if pool, err = startGossip(cfg, up.notify); err != nil {
			return nil, errors.Join(err, closeListeners(), closePool())
		}
		cfg.Server.Membership = pool
		// Every agent runs a full anti-entropy sync soon after a new
		// leader takes office, as Consul's do: the leader tells them by
		// gossip.
		announce, log := pool.AnnounceLeader, logger(cfg.Server.Logger)
		cfg.Server.AnnounceLeader = func() {
			if err := announce(); err != nil {
				log.Warn("failed to announce the new leader", "error", err)
			}
		}
		// The leader's reconcile records the node at its gossip address;
		// self-registration and anti-entropy must agree with it.
		cfg.Server.NodeAddr = pool.Local().IP
		leaving = &leavingPool{Pool: pool, left: left}
		cfg.HTTP.Members = leaving
	}
	cfg.HTTP.DebugConfig = serverDebugConfig(cfg, pool)
	if cfg.AdjustServer != nil {
		cfg.AdjustServer(&cfg.Server)
	}
	srv, err := server.NewServer(cfg.Server)
	if err != nil {
		err = fmt.Errorf("agent: %w", err)
		if pool != nil {
			err = errors.Join(err, pool.Shutdown())
		}
		return nil, errors.Join(err, closeListeners(), closePool())
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{
		left:    left,
		pool:    pool,
		srv:     srv,
		ownPool: ownPool,
		addr:    cfg.Server.HTTPAddr,
		cancel:  cancel,
	}
	// Anti-entropy writes through this server's own API, which forwards to
	// the leader: sent to its own server port as a client agent's are, or
	// run in process when it has none (a dev server without one). It
	// starts once the node is registered, so its first full sync finds
	// the node.
	self := &ownAPI{}
	var syncVia rpc.Forwarder = self
	syncAddr := ownAPIAddr
	if port := serverPort(cfg.Server); port != "" {
		syncVia, syncAddr = cfg.Forward, port
	}
	var tags map[string]string
	if cfg.Gossip != nil {
		tags = cfg.Gossip.Tags
	}
	info := nodeInfo(cfg.Server.NodeID, srv.NodeAddr(), agentVersion(tags, cfg.HTTP.Version), cfg.NodeMeta)
	cfg.Local.Sync.NodeInfo, cfg.HTTP.NodeMeta = info, info.Meta
	if cfg.Local.DataDir == "" && !cfg.Server.Dev {
		// The agent keeps its registrations beside the raft data, on the
		// same disk, as Consul keeps them in its data_dir.
		cfg.Local.DataDir, cfg.Local.Disk = cfg.Server.DataDir, cfg.Server.Disk
	}
	local, err := startLocal(ctx, cfg.Local, cfg.Server.NodeName, srv.NodeAddr(), syncVia, own,
		func() []string { return []string{syncAddr} }, pool, srv.Registered(), logger(cfg.Server.Logger).Named("local"))
	if err != nil {
		cancel()
		err = errors.Join(err, srv.Shutdown())
		if pool != nil {
			err = errors.Join(err, pool.Shutdown())
		}
		return nil, errors.Join(err, ln.Close(), closePool())
	}
	a.local = local
	up.la.Store(local.la)
	a.coordDone = startCoordinates(ctx, cfg.Coordinates, cfg.Server.NodeName, pool, syncVia,
		func() []string { return []string{syncAddr} }, aclOpts.Tokens, logger(cfg.Server.Logger).Named("coordinate"))
	if leaving != nil {
		leaving.local = a.local
	}
	a.components = agentComponents(cfg, syncAddr != ownAPIAddr)
	limits := cfg.Limits.withDefaults()
	serverAPI := httpapi.New(srv, cfg.HTTP)
	authorize := httpapi.LocalAuthorize(srv, aclOpts)
	api := registeredGate(httpapi.WithLocalAgent(a.local.la, serverAPI,
		httpapi.LocalOptions{Datacenter: cfg.HTTP.Datacenter, Logger: cfg.HTTP.Logger, Reload: cfg.Reload, Node: cfg.Server.NodeName,
			ACL: aclOpts, Authorize: authorize}), srv, registerWait)
	api = httpapi.WithACLHeader(aclOpts, api)
	self.h.Store(&api)
	// Requests forwarded to the server port run the server's API. The
	// agent-local endpoints are not among them: an agent answers those
	// itself and never forwards them.
	srv.ServeForwarded(registeredGate(serverAPI, srv, registerWait))
	front := api
	if !cfg.NoAgentCache {
		a.cache = agentcache.New(api, agentcache.Config{Logger: logger(cfg.Server.Logger).Named("cache")})
		front = a.cache
	}
	a.api = serveAPI(ctx, limits.writeDeadline(withAgentOps(front, logs, cfg.HTTP.Logger, cfg.Telemetry, cfg.Debug,
		opsACL{opts: aclOpts, authorize: authorize, node: cfg.Server.NodeName}), httpapi.LongestBlock()),
		limits, logger(cfg.Server.Logger), ln, cfg.HTTPSListener, httpsTLS)
	if pool != nil && len(cfg.Join) > 0 {
		go retryJoin(ctx, pool, cfg.Join, cfg.RetryInterval, logger(cfg.Server.Logger))
	}
	return a, nil
}

// GossipTags are the tags Consul's tools read from a member besides those
// the agent fills in: `consul members` prints the datacenter, the build
// ("<version>:<revision>") and the protocol range, which is Consul's
// protocol 2 (2 to 3).
func GossipTags(datacenter, build string) map[string]string {
	return map[string]string{gossip.TagDC: datacenter, gossip.TagBuild: build,
		gossip.TagVsn: "2", gossip.TagVsnMin: "2", gossip.TagVsnMax: "3"}
}

// startGossip starts the agent's pool with the tags a server advertises;
// serverUp hears of new leaders.
func startGossip(cfg Config, serverUp func()) (*gossip.Pool, error) {
	g := *cfg.Gossip
	g.NodeName = cfg.Server.NodeName
	g.ServerUp = serverUp
	tags := maps.Clone(g.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[gossip.TagRole] = gossip.RoleServer
	if id := cfg.Server.NodeID; id != "" {
		tags[gossip.TagID] = id
	}
	if cfg.Server.BootstrapExpect > 0 {
		tags[gossip.TagExpect] = strconv.Itoa(cfg.Server.BootstrapExpect)
	}
	if _, port, err := net.SplitHostPort(cfg.Server.RaftAddr); err == nil {
		tags[gossip.TagPort] = port
	}
	g.Tags = tags
	if g.Timing == nil && cfg.Server.Dev {
		g.Timing = gossip.DevTiming // Consul's -dev shortens gossip's timing too
	}
	if g.Logger == nil && cfg.Server.Logger != nil {
		g.Logger = cfg.Server.Logger.Named("gossip")
	}
	pool, err := gossip.Start(g)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return pool, nil
}

// retryJoin joins addrs, retrying every interval (default 30 s, Consul's
// retry_interval) until it reaches someone or ctx ends, as Consul's
// -retry-join does.
func retryJoin(ctx context.Context, pool *gossip.Pool, addrs []string, interval time.Duration, log hclog.Logger) {
	if interval <= 0 {
		interval = 30 * time.Second
	}
	for {
		n, err := pool.Join(addrs)
		if err == nil && n > 0 {
			log.Info("joined the gossip pool", "reached", n)
			return
		}
		log.Warn("Join cluster failed, will retry", "addresses", addrs, "retry_interval", interval, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// leavingPool is the pool as the HTTP API sees it: a graceful leave
// (PUT /v1/agent/leave) also tells the agent to stop, as Consul's does.
type leavingPool struct {
	*gossip.Pool
	left chan struct{}
	once sync.Once
	// local is the agent's anti-entropy, halted before the agent leaves
	// (local.Syncer.Halt says why). Set before the API serves.
	local *localAgent
}

// Leave halts anti-entropy, then leaves the gossip pool. A failed leave
// leaves anti-entropy halted: the agent is on its way out either way.
func (p *leavingPool) Leave() error {
	if p.local != nil {
		p.local.halt()
	}
	if err := p.Pool.Leave(); err != nil {
		return err
	}
	p.once.Do(func() { close(p.left) })
	return nil
}

// Left closes once the agent has left its gossip pool through the API; the
// process then shuts the agent down.
func (a *Agent) Left() <-chan struct{} { return a.left }

// Members is the agent's gossip pool, nil without one.
func (a *Agent) Members() *GossipPool { return a.pool }

func logger(l hclog.Logger) hclog.Logger {
	if l == nil {
		return hclog.NewNullLogger()
	}
	return l.Named("http")
}

// Server is the raft server behind the API.
func (a *Agent) Server() *Server { return a.srv }

// HTTPAddr is the host:port of the API.
func (a *Agent) HTTPAddr() string { return a.addr }

// LoadConfigDefinitions makes the agent's config-defined services and
// checks defs (at start and on reload; local.Agent.LoadConfig).
func (a *Agent) LoadConfigDefinitions(defs ConfigDefinitions) error {
	return a.local.la.LoadConfig(defs)
}

// Shutdown stops serving, ends in-flight requests (blocking reads answer at
// once), then shuts the server down. Safe to call more than once, and
// after Kill.
func (a *Agent) Shutdown() error { return a.stop(true) }

// Kill stops the agent as kill -9 stops the process: client connections
// are cut without waiting for answers in flight, and the agent does not
// leave the gossip pool, so the others see it fail. What the server has
// written stays in its stores for a restart. The simulator's crash fault.
func (a *Agent) Kill() error { return a.stop(false) }

// stop shuts everything down; with drain, HTTP answers what is in flight
// first.
func (a *Agent) stop(drain bool) error {
	a.once.Do(func() {
		a.cancel()
		if a.coordDone != nil {
			<-a.coordDone
		}
		var errs []error
		errs = append(errs, a.api.stop(drain))
		if a.cache != nil {
			a.cache.Close()
		}
		a.local.stop()
		errs = append(errs, a.srv.Shutdown())
		if a.ownPool != nil {
			errs = append(errs, a.ownPool.Close())
		}
		if a.pool != nil {
			errs = append(errs, a.pool.Shutdown())
		}
		a.shutdown = errors.Join(errs...)
	})
	return a.shutdown
}

// ownAPIAddr names a server agent's own API to its anti-entropy.
const ownAPIAddr = "self"

// ownAPI is the Forwarder of a server agent's anti-entropy: its own HTTP
// API, run in process (as if a client had called it), once the API exists.
type ownAPI struct{ h atomic.Pointer[http.Handler] }

func (o *ownAPI) Forward(ctx context.Context, addr string, req *rpc.Request) (*rpc.Response, error) {
	h := o.h.Load()
	if h == nil {
		return nil, errors.New("agent: own API not started")
	}
	return rpc.Local{ownAPIAddr: *h}.Forward(ctx, addr, req)
}

// serverPort is the address of the server port the server opens itself,
// "" if it opens none (an injected raft transport, a dev server without
// one).
func serverPort(c server.Config) string {
	switch {
	case c.ServerListener != nil:
		return c.ServerListener.Addr().String()
	case c.Transport != nil:
		return ""
	}
	return c.RaftAddr
}
