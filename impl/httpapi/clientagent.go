package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// agentHeader names the client agent a request came through. A server
// treats that node as "the agent's node" (a session's default Node, S2;
// agent check updates, S48), and, unlike forwardedHeader, still forwards
// the request once to its leader.
const agentHeader = "X-Tenure-Agent"

// ClientOptions configure a client agent's HTTP API.
type ClientOptions struct {
	// Node is the client agent's node name.
	Node string
	// Members is its gossip pool; it also says which servers exist.
	Members Members
	// Forward carries requests to servers (pooled, kept alive).
	Forward    http.RoundTripper
	Datacenter string
	Version    string
	Logger     hclog.Logger
}

// NewClientAgent is a client agent's HTTP API: the membership endpoints and
// /v1/agent/self are answered by the agent itself, as Consul's are; every
// other request goes to a server, marked with the agent's node. Like
// Consul's agent it keeps to one server while gossip lists it alive and it
// answers, so that its stale reads do not step back and forth between
// servers that have applied different amounts of the log; a server that
// fails is left for the next one in turn.
func NewClientAgent(opts ClientOptions) http.Handler {
	if opts.Forward == nil {
		opts.Forward = http.DefaultTransport
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
	// The membership handlers need only Options.Members.
	c.local = &handler{opts: Options{Members: opts.Members, Datacenter: opts.Datacenter, Logger: opts.Logger}}
	c.routes = []route{
		{"/v1/agent/self", false, []string{get}, c.agentSelf},
		{"/v1/agent/members", false, []string{get}, c.local.agentMembers},
		{"/v1/agent/join/", true, []string{put}, c.local.agentJoin},
		{"/v1/agent/leave", false, []string{put}, c.local.agentLeave},
		{"/v1/agent/force-leave/", true, []string{put}, c.local.agentForceLeave},
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
	if r.URL.Path == "/v1/session/create" {
		a.awaitRegistered(r.Context())
	}
	a.forward(w, r)
}

// awaitRegistered holds a session create until the leader has registered
// this agent's node with serfHealth passing (S47), for at most
// registerWait: an empty-body create binds to exactly that node and check.
func (a *clientAgent) awaitRegistered(ctx context.Context) {
	if a.registered.Load() {
		return
	}
	deadline := time.Now().Add(registerWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if a.nodePassing(ctx) {
			a.registered.Store(true)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// registerWait bounds awaitRegistered, as RegisterWait does on a server.
const registerWait = 10 * time.Second

// nodePassing asks a server whether this agent's serfHealth is passing.
func (a *clientAgent) nodePassing(ctx context.Context) bool {
	servers := a.servers()
	if len(servers) == 0 {
		return false
	}
	target, err := leaderURL(servers[0])
	if err != nil {
		return false
	}
	target.Path = "/v1/health/node/" + url.PathEscape(a.opts.Node)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return false
	}
	resp, err := (&http.Client{Transport: a.opts.Forward, Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var checks []struct{ CheckID, Status string }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&checks) != nil {
		return false
	}
	for _, c := range checks {
		if c.CheckID == "serfHealth" {
			return c.Status == "passing"
		}
	}
	return false
}

// servers are the HTTP addresses of the alive servers gossip knows.
func (a *clientAgent) servers() []string {
	var out []string
	for _, m := range a.opts.Members.List() {
		if m.Server && m.SerfStatus == 1 && m.Address != "" {
			out = append(out, m.Address)
		}
	}
	return out
}

// forward sends the request to a server; with none known it answers
// Consul's 500.
func (a *clientAgent) forward(w http.ResponseWriter, r *http.Request) {
	servers := a.servers()
	if len(servers) == 0 {
		writeError(w, errorf(http.StatusInternalServerError, "No known Consul servers"))
		return
	}
	addr := a.pick(servers)
	target, err := leaderURL(addr)
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "%v", err))
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// A client cannot claim another node by sending the header
			// itself: the agent's own value replaces it.
			pr.Out.Header.Del(forwardedHeader)
			pr.Out.Header.Set(agentHeader, a.opts.Node)
		},
		Transport: a.opts.Forward,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if callerGone(r) {
				// The caller gave up (an abandoned blocking query, a
				// killed client): the server did not fail.
				a.opts.Logger.Debug("caller went away", "server", addr, "path", r.URL.Path)
				return
			}
			a.current.CompareAndSwap(addr, "")
			a.opts.Logger.Warn("request to server failed", "server", addr, "path", r.URL.Path, "error", err)
			writeError(w, errorf(http.StatusInternalServerError, "rpc error: server %s: %v", addr, err))
		},
	}
	proxy.ServeHTTP(w, r)
}

// callerGone says whether r's caller has hung up, which ends a proxied
// request with an error that says nothing of the server.
func callerGone(r *http.Request) bool { return r.Context().Err() != nil }

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
	local := a.opts.Members.Local()
	return writeJSON(c, http.StatusOK, map[string]any{
		"Config": map[string]any{"Datacenter": a.opts.Datacenter, "PrimaryDatacenter": a.opts.Datacenter,
			"NodeName": a.opts.Node, "Server": false, "Version": a.opts.Version, "BindAddr": local.IP},
		"Member": toMemberJSON(local),
		"Meta":   map[string]string{},
		"Stats": map[string]map[string]string{
			"agent":    {"check_monitors": "0", "check_ttls": "0", "checks": "0", "services": "0"},
			"build":    {"version": a.opts.Version, "revision": "", "prerelease": "", "version_metadata": ""},
			"consul":   {"server": "false", "known_servers": fmt.Sprint(len(a.servers())), "acl": "disabled"},
			"runtime":  {"os": runtime.GOOS, "arch": runtime.GOARCH, "version": runtime.Version(), "max_procs": fmt.Sprint(runtime.GOMAXPROCS(0)), "goroutines": fmt.Sprint(runtime.NumGoroutine()), "cpu_count": fmt.Sprint(runtime.NumCPU())},
			"serf_lan": a.opts.Members.Stats(),
		},
	})
}
