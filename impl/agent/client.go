package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

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
	// NodeID is the agent's node UUID, advertised in its gossip id tag
	// (S62); empty advertises none.
	NodeID string
	// Debug and Telemetry as for a server agent.
	Debug     bool
	Telemetry *MemSink
	// Listener serves the HTTP API, at HTTPAddr.
	Listener net.Listener
	HTTPAddr string
	Gossip   GossipConfig
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
	Logger     hclog.Logger
	// Local configures the agent's own services and checks, as for a
	// server agent (Config.Local).
	Local LocalConfig
	// NodeMeta as for a server agent (Config.NodeMeta).
	NodeMeta map[string]string
	// ACL as for a server agent (Config.ACL); DataDir is where its tokens
	// persist.
	ACL     ACLConfig
	DataDir string
}

// Client is a running client agent.
type Client struct {
	pool    *gossip.Pool
	ownPool *rpc.Pool
	local   *localAgent
	http    *http.Server
	addr    string
	left    chan struct{}
	cancel  context.CancelFunc
	served  chan error
	once    sync.Once
	err     error
}

// NewClient starts a client agent. On error nothing is left running.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Listener == nil {
		return nil, errors.New("agent: a client agent needs a Listener")
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = cfg.Listener.Addr().String()
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	aclOpts, err := cfg.ACL.httpOptions(cfg.DataDir, cfg.Datacenter, cfg.NodeName, false)
	if err != nil {
		return nil, errors.Join(err, cfg.Listener.Close())
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
	pool, err := gossip.Start(g)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("agent: %w", err), cfg.Listener.Close(), ownPool.Close())
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{pool: pool, ownPool: ownPool, addr: cfg.HTTPAddr, left: make(chan struct{}), cancel: cancel, served: make(chan error, 1)}
	// Anti-entropy goes to a server gossip knows, as the agent's other
	// forwarded requests do; it starts once one is known.
	servers := func() []string { return gossipServers(pool, cfg.NodeName, serverAddr) }
	info := nodeInfo(cfg.NodeID, pool.Local().IP, agentVersion(g.Tags, cfg.Version), cfg.NodeMeta)
	cfg.Local.Sync.NodeInfo = info
	c.local = startLocal(ctx, cfg.Local, cfg.NodeName, pool.Local().IP, fwd, servers, pool,
		serverKnown(ctx, servers, 200*time.Millisecond), log.Named("local"))
	clientAPI := httpapi.NewClientAgent(httpapi.ClientOptions{Node: cfg.NodeName,
		Members: &leavingPool{Pool: pool, left: c.left, local: c.local}, Forward: fwd, ServerAddr: serverAddr,
		Datacenter: cfg.Datacenter,
		Version:    cfg.Version, NodeMeta: info.Meta, Logger: log.Named("http"), ACL: aclOpts})
	api := httpapi.WithACLHeader(aclOpts, httpapi.WithLocalAgent(c.local.la, clientAPI, httpapi.LocalOptions{
		Datacenter: cfg.Datacenter, Logger: log.Named("http"), Node: cfg.NodeName,
		ACL: aclOpts, Authorize: httpapi.RemoteAuthorize(clientAPI)}))
	limits := HTTPLimits{}.withDefaults()
	c.http = &http.Server{
		Handler:     limits.writeDeadline(withDebug(api, cfg.Telemetry, cfg.Debug), httpapi.LongestBlock()),
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	limits.server(c.http)
	go func() { c.served <- c.http.Serve(cfg.Listener) }()
	if len(cfg.Join) > 0 {
		go retryJoin(ctx, pool, cfg.Join, cfg.RetryInterval, log)
	}
	return c, nil
}

// HTTPAddr is the host:port of the API.
func (c *Client) HTTPAddr() string { return c.addr }

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
		var err error
		if drain {
			err = stopHTTP(c.http, c.served)
		} else {
			err = killHTTP(c.http, c.served)
		}
		c.local.stop()
		c.err = errors.Join(err, c.ownPool.Close(), c.pool.Shutdown())
	})
	return c.err
}
