package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/disk"
	"github.com/tenurekv/tenure/impl/internal/agentcache"
	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// ClientConfig is a client agent: a gossip member without raft that serves
// Consul's HTTP API on its own address and sends everything but its own
// membership endpoints to a server. Sessions created through it belong to
// its node, which the leader registers from gossip, so by default they are
// bound to this agent's serfHealth: Consul's default failure detector.
type ClientConfig struct {
	NodeName string
	// Coordinates as for a server agent.
	Coordinates CoordinateConfig
	// Reload as for a server agent.
	Reload func() error
	// NodeID is the agent's node UUID, advertised in its gossip id tag
	// (S62); empty advertises none.
	NodeID string
	// Debug, Telemetry and NoAgentCache as for a server agent.
	Debug        bool
	Telemetry    *MemSink
	NoAgentCache bool
	// Listener serves the HTTP API, at HTTPAddr; HTTPSListener serves it
	// over HTTPS with TLS's https settings. At least one is needed.
	Listener      net.Listener
	HTTPSListener net.Listener
	HTTPAddr      string
	// TLS, if set, is the agent's TLS (LoadTLS): HTTPS's, and, with
	// verify_outgoing, that of its connections to servers' ports.
	TLS    *TLS
	Gossip GossipConfig
	// Join and RetryInterval as for a server agent.
	Join          []string
	RetryInterval time.Duration
	// Dial connects to servers' ports (a server's is its gossip address
	// with its port tag) for the requests the agent forwards; default
	// rpc.DialTCP. The simulator gives its network's.
	Dial rpc.Dial
	// Forward, if set, carries the forwarded requests instead of the
	// agent's own pool (tests count them with it).
	Forward    rpc.Forwarder
	Datacenter string
	Version    string
	// Build and DebugConfig are shown by /v1/agent/self, as for a server
	// agent (HTTPOptions.Build, HTTPOptions.DebugConfig).
	Build       BuildInfo
	DebugConfig map[string]any
	Logger      hclog.Logger
	// Local configures the agent's own services and checks, as for a
	// server agent (Config.Local).
	Local LocalConfig
	// NodeMeta as for a server agent (Config.NodeMeta).
	NodeMeta map[string]string
	// DataDir, if set, keeps the services and checks registered through
	// the agent's API (Local.DataDir), on Disk (nil: the real disk), and
	// the tokens persisted through /v1/agent/token.
	DataDir string
	Disk    disk.FS
	// ACL as for a server agent (Config.ACL).
	ACL ACLConfig
}

// Client is a running client agent.
type Client struct {
	pool    *gossip.Pool
	ownPool *rpc.Pool
	local   *localAgent
	api     *apiServers
	cache   *agentcache.Cache // nil with NoAgentCache
	addr    string
	left    chan struct{}
	cancel  context.CancelFunc
	// coordDone is closed once the coordinate sender has stopped.
	coordDone <-chan struct{}
	once      sync.Once
	err       error
}

// NewClient starts a client agent. On error nothing is left running.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Listener == nil && cfg.HTTPSListener == nil {
		return nil, errors.New("agent: a client agent needs a Listener or an HTTPSListener")
	}
	closeListeners := func() error { return closeAll(cfg.Listener, cfg.HTTPSListener) }
	var httpsTLS *tls.Config
	switch {
	case cfg.TLS != nil:
		cfg.Dial = portDial(cfg.TLS, cfg.Dial)
		if cfg.HTTPSListener != nil {
			httpsTLS = cfg.TLS.HTTPS()
		}
	case cfg.HTTPSListener != nil:
		return nil, errors.Join(errors.New("agent: an HTTPS listener needs TLS settings"), closeListeners())
	}
	if cfg.HTTPAddr == "" {
		if cfg.Listener != nil {
			cfg.HTTPAddr = cfg.Listener.Addr().String()
		} else {
			cfg.HTTPAddr = cfg.HTTPSListener.Addr().String()
		}
	}
	logs, httpLogger := agentLogs(cfg.Logger, nil)
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	aclOpts, err := cfg.ACL.httpOptions(cfg.DataDir, cfg.Datacenter, cfg.NodeName, false)
	if err != nil {
		return nil, errors.Join(err, closeListeners())
	}
	ownPool := rpc.NewPool(rpc.PoolConfig{Dial: cfg.Dial, Logger: log.Named("rpc")})
	var fwd rpc.Forwarder = ownPool
	if cfg.Forward != nil {
		fwd = cfg.Forward
	}
	serverAddr := func(m gossip.Member) string { return m.RaftAddr }

	g := cfg.Gossip
	g.NodeName = cfg.NodeName
	g.Tags = maps.Clone(g.Tags)
	if g.Tags == nil {
		g.Tags = map[string]string{}
	}
	g.Tags[gossip.TagRole] = gossip.RoleClient
	if cfg.NodeID != "" {
		g.Tags[gossip.TagID] = cfg.NodeID
	}
	if g.Logger == nil {
		g.Logger = log.Named("gossip")
	}
	// A new leader, or a server joining, makes the agent run a full
	// anti-entropy sync soon, as Consul's client agents do.
	up := &serverUp{}
	g.ServerUp = up.notify
	pool, err := gossip.Start(g)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("agent: %w", err), closeListeners(), ownPool.Close())
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{pool: pool, ownPool: ownPool, addr: cfg.HTTPAddr, left: make(chan struct{}), cancel: cancel}
	// Anti-entropy goes to a server gossip knows, as the agent's other
	// forwarded requests do; it starts once one is known.
	servers := func() []string { return gossipServers(pool, cfg.NodeName, serverAddr) }
	info := nodeInfo(cfg.NodeID, pool.Local().IP, agentVersion(g.Tags, cfg.Version), cfg.NodeMeta)
	cfg.Local.Sync.NodeInfo = info
	if cfg.Local.DataDir == "" {
		cfg.Local.DataDir, cfg.Local.Disk = cfg.DataDir, cfg.Disk
	}
	local, err := startLocal(ctx, cfg.Local, cfg.NodeName, pool.Local().IP, fwd, cfg.ACL.ownTokens(aclOpts.Tokens), servers, pool,
		serverKnown(ctx, servers, 200*time.Millisecond), log.Named("local"))
	if err != nil {
		cancel()
		return nil, errors.Join(err, closeListeners(), ownPool.Close(), pool.Shutdown())
	}
	c.local = local
	up.la.Store(local.la)
	c.coordDone = startCoordinates(ctx, cfg.Coordinates, cfg.NodeName, pool, fwd, servers, aclOpts.Tokens, log.Named("coordinate"))
	clientAPI := httpapi.NewClientAgent(httpapi.ClientOptions{Node: cfg.NodeName,
		Members: &leavingPool{Pool: pool, left: c.left, local: c.local}, Forward: fwd, ServerAddr: serverAddr,
		Datacenter: cfg.Datacenter, Version: cfg.Version, Build: cfg.Build, DebugConfig: clientDebugConfig(cfg, pool),
		NodeMeta: info.Meta, Logger: httpLogger, ACL: aclOpts, DisableCoordinates: cfg.Coordinates.Disable})
	authorize := httpapi.RemoteAuthorize(clientAPI)
	api := httpapi.WithACLHeader(aclOpts, httpapi.WithLocalAgent(c.local.la, clientAPI, httpapi.LocalOptions{
		Datacenter: cfg.Datacenter, Logger: httpLogger, Reload: cfg.Reload, Node: cfg.NodeName,
		ACL: aclOpts, Authorize: authorize, AuthorizeAll: httpapi.RemoteAuthorizeAll(clientAPI)}))
	if !cfg.NoAgentCache {
		c.cache = agentcache.New(api, agentcache.Config{Logger: log.Named("cache")})
		api = c.cache
	}
	limits := HTTPLimits{}.withDefaults()
	c.api = serveAPI(ctx, limits.writeDeadline(withAgentOps(api, logs, httpLogger, cfg.Telemetry, cfg.Debug,
		opsACL{opts: aclOpts, authorize: authorize, node: cfg.NodeName}), httpapi.LongestBlock()),
		limits, log.Named("http"), cfg.Listener, cfg.HTTPSListener, httpsTLS)
	if len(cfg.Join) > 0 {
		go retryJoin(ctx, pool, cfg.Join, cfg.RetryInterval, log)
	}
	return c, nil
}

// HTTPAddr is the host:port of the API.
func (c *Client) HTTPAddr() string { return c.addr }

// LoadConfigDefinitions as for a server agent.
func (c *Client) LoadConfigDefinitions(defs ConfigDefinitions) error {
	return c.local.la.LoadConfig(defs)
}

// Members is the agent's gossip pool.
func (c *Client) Members() *GossipPool { return c.pool }

// Left closes once the agent has left its pool through the API.
func (c *Client) Left() <-chan struct{} { return c.left }

// Shutdown stops serving and stops gossip without leaving (the others see
// this agent fail). Safe to call more than once, and after Kill.
func (c *Client) Shutdown() error { return c.stop(true) }

// Kill stops the agent as kill -9 stops the process: as Shutdown, but
// client connections are cut without waiting for answers in flight. The
// simulator's crash of a client's host.
func (c *Client) Kill() error { return c.stop(false) }

func (c *Client) stop(drain bool) error {
	c.once.Do(func() {
		c.cancel()
		if c.coordDone != nil {
			<-c.coordDone
		}
		err := c.api.stop(drain)
		if c.cache != nil {
			c.cache.Close()
		}
		c.local.stop()
		c.err = errors.Join(err, c.ownPool.Close(), c.pool.Shutdown())
	})
	return c.err
}
