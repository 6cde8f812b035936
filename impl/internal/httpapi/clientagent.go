package httpapi

import (
	"github.com/tenurekv/tenure/acl"

	"fmt"
	"hash/fnv"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/gossip"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// ClientOptions configure a client agent's HTTP API.
type ClientOptions struct {
	// Node is the client agent's node name.
	Node string
	// Members is its gossip pool; it also says which servers exist.
	Members Members
	// Forward carries requests to servers' server ports, as from this
	// agent's node: a server treats that node as "the agent's node" (a
	// session's default Node, S2; agent check updates, S48) and, unlike a
	// request another server forwarded, may still forward it once to its
	// leader. Required.
	Forward rpc.Forwarder
	// ServerAddr is where a server gossip lists takes forwarded requests;
	// default its server port (gossip address and the port tag,
	// Member.RaftAddr).
	ServerAddr func(m gossip.Member) string
	Datacenter string
	Version    string
	// Build and DebugConfig as for a server (Options.Build,
	// Options.DebugConfig).
	Build       BuildInfo
	DebugConfig map[string]any
	// NodeMeta is the agent's node meta, shown by /v1/agent/self (S63).
	NodeMeta map[string]string
	Logger   hclog.Logger
	// ACL is the agent's ACL configuration and tokens: a request that
	// names no token is forwarded with the agent's default (acl.go).
	ACL ACLOptions
	// DisableCoordinates answers the coordinate endpoints 401 here, as
	// Consul's agent does before it asks a server (S89).
	DisableCoordinates bool
}

// NewClientAgent is a client agent's HTTP API: the membership endpoints, the
// gossip keyring and /v1/agent/self are answered by the agent itself (the
// keyring from its own pool, where Consul asks a server to run it on the
// server's pool: the same members answer); every
// other request goes to a server, marked with the agent's node. Like
// Consul's agent it keeps to one server while gossip lists it alive and it
// answers, so that its stale reads do not step back and forth between
// servers that have applied different amounts of the log; a server that
// fails is left for the next one in turn.
func NewClientAgent(opts ClientOptions) http.Handler {
	if opts.ServerAddr == nil {
		opts.ServerAddr = func(m gossip.Member) string { return m.RaftAddr }
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Datacenter == "" {
		opts.Datacenter = "dc1"
	}
	if opts.Version == "" {
		opts.Version = "tenure"
	}
	c := &clientAgent{opts: opts}
	// Start clients at different servers, fixed per node so simulated runs
	// repeat.
	h := fnv.New64a()
	_, _ = h.Write([]byte(opts.Node))
	c.next.Store(h.Sum64() % 1024)
	c.current.Store("")
	// The membership handlers need only Options.Members, and with ACLs
	// the agent's configuration and a way to ask a server (S90).
	c.local = &handler{opts: Options{Members: opts.Members, Datacenter: opts.Datacenter, Logger: opts.Logger,
		ACL: opts.ACL, Authorize: RemoteAuthorize(c), AuthorizeAll: RemoteAuthorizeAll(c), Node: opts.Node}}
	c.routes = []route{
		{"/v1/agent/self", false, []string{get}, c.agentSelf},
		{"/v1/agent/members", false, []string{get}, c.local.agentMembers},
		{"/v1/agent/join/", true, []string{put}, c.local.agentJoin},
		{"/v1/agent/leave", false, []string{put}, c.local.agentLeave},
		{"/v1/agent/force-leave/", true, []string{put}, c.local.agentForceLeave},
		{"/v1/operator/keyring", false, []string{get, post, put, del}, c.local.operatorKeyring},
	}
	return c
}

type clientAgent struct {
	opts       ClientOptions
	local      *handler
	routes     []route
	next       atomic.Uint64 // the server to move to when current fails
	current    atomic.Value  // string: the server in use
	registered atomic.Bool   // seen registered once (awaitRegistered)
}

func (a *clientAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if serveRoute(a.routes, w, r, a.opts.Logger) {
		return
	}
	if a.opts.DisableCoordinates && strings.HasPrefix(r.URL.Path, "/v1/coordinate/") {
		writeError(w, errorf(http.StatusUnauthorized, "Coordinate support disabled"))
		return
	}
	if r.URL.Path == "/v1/session/create" {
		a.awaitRegistered(r.Context())
	}
	a.forward(w, r)
}

// servers are the server-port addresses of the alive servers gossip knows.
func (a *clientAgent) servers() []string {
	var out []string
	for _, m := range a.opts.Members.List() {
		if m.Server && m.SerfStatus == 1 {
			if addr := a.opts.ServerAddr(m); addr != "" {
				out = append(out, addr)
			}
		}
	}
	return out
}

// forward sends the request to a server as from this agent's node; with
// none known it answers Consul's 500. Headers a client sends are not
// origins: only the agent names its node.
func (a *clientAgent) forward(w http.ResponseWriter, r *http.Request) {
	servers := a.servers()
	if len(servers) == 0 || a.opts.Forward == nil {
		err := errorf(http.StatusInternalServerError, "No known Consul servers")
		logRequestError(a.opts.Logger, r, err)
		writeError(w, err)
		return
	}
	addr := a.pick(servers)
	req, err := forwardRequest(r, rpc.Origin{Node: a.opts.Node}, nil)
	if err != nil {
		logRequestError(a.opts.Logger, r, err)
		writeError(w, err)
		return
	}
	carryToken(req, a.opts.ACL)
	resp, err := a.opts.Forward.Forward(r.Context(), addr, req)
	if err != nil {
		if callerGone(r) {
			// The caller gave up (an abandoned blocking query, a
			// killed client): the server did not fail.
			a.opts.Logger.Debug("caller went away", "server", addr, "path", r.URL.Path)
			return
		}
		a.current.CompareAndSwap(addr, "")
		a.opts.Logger.Warn("request to server failed", "server", addr, "path", r.URL.Path, "error", err)
		failed := errorf(http.StatusInternalServerError, "rpc error: server %s: %v", addr, err)
		logRequestError(a.opts.Logger, r, failed)
		writeError(w, failed)
		return
	}
	logForwardedError(a.opts.Logger, r, resp)
	writeForwarded(w, resp)
}

// pick is the server for the next request: the one in use while gossip
// still lists it alive, else the next one in sorted order.
func (a *clientAgent) pick(servers []string) string {
	if cur, _ := a.current.Load().(string); cur != "" && slices.Contains(servers, cur) {
		return cur
	}
	slices.Sort(servers)
	addr := servers[a.next.Add(1)%uint64(len(servers))]
	a.current.Store(addr)
	return addr
}

// agentSelf is the client agent's own /v1/agent/self.
func (a *clientAgent) agentSelf(c *call) error {
	if err := a.local.agentAllowed(c, acl.ResourceAgent, a.opts.Node, acl.AccessRead); err != nil {
		return err // S90
	}
	local := a.opts.Members.Local()
	opts := Options{Datacenter: a.opts.Datacenter, Version: a.opts.Version, Build: a.opts.Build, DebugConfig: a.opts.DebugConfig}
	config := selfConfig(&opts, a.opts.Node, local.Tags[gossip.TagID], false)
	config["BindAddr"] = local.IP
	return writeJSON(c, http.StatusOK, map[string]any{
		"Config":      config,
		"DebugConfig": selfDebugConfig(&opts),
		"Member":      toMemberJSON(local),
		"Meta":        nonNilMeta(a.opts.NodeMeta),
		"Stats": map[string]map[string]string{
			"agent":    {"check_monitors": "0", "check_ttls": "0", "checks": "0", "services": "0"},
			"build":    selfBuildStats(&opts),
			"consul":   {"server": "false", "known_servers": fmt.Sprint(len(a.servers())), "acl": "disabled"},
			"runtime":  {"os": runtime.GOOS, "arch": runtime.GOARCH, "version": runtime.Version(), "max_procs": fmt.Sprint(runtime.GOMAXPROCS(0)), "goroutines": fmt.Sprint(runtime.NumGoroutine()), "cpu_count": fmt.Sprint(runtime.NumCPU())},
			"serf_lan": a.opts.Members.Stats(),
		},
	})
}
