package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// Options configures the handler. The zero value is usable.
type Options struct {
	// Forward carries requests a follower forwards to the leader's server
	// port (an *rpc.Pool; tests pass an rpc.Local). Without it a follower
	// answers 500 where it would forward.
	Forward rpc.Forwarder
	// Jitter, if set, returns extra wait in [0, limit) that is added to each
	// blocking read, limit being wait/16 as in Consul. Nil adds none, which
	// keeps simulated runs reproducible.
	Jitter func(limit time.Duration) time.Duration
	// Logger receives request failures and forwarding errors; default discards.
	Logger hclog.Logger
	// Compat reports rejections with Consul's status codes (500 for apply-time
	// rejections and bad numbers) instead of tenure's 400 (SPEC "Compat profile").
	Compat bool
	// Datacenter is shown in catalog answers; default "dc1".
	Datacenter string
	// NodeID is the server's node UUID, shown by /v1/agent/self (S62).
	NodeID string
	// NodeMeta is the agent's node meta, shown by /v1/agent/self (S63).
	NodeMeta map[string]string
	// Members is the agent's gossip pool, for the membership endpoints.
	Members Members
	// Version is what /v1/agent/self reports; default "tenure".
	Version string
	// Build is the binary's revision and build time, which
	// /v1/agent/self reports beside Version.
	Build BuildInfo
	// DebugConfig is /v1/agent/self's DebugConfig: the agent's effective
	// settings under the names of Consul's runtime configuration, for
	// the ones tenure has. Shown as given; nil shows {}.
	DebugConfig map[string]any
	// ACL is the agent's ACL configuration (acl.go); the zero value is
	// ACLs off.
	ACL ACLOptions
	// DisableCoordinates answers every coordinate endpoint 401, as
	// Consul's disable_coordinates does (S89).
	DisableCoordinates bool
	// CoordinateDims is the Vivaldi dimensionality an update must have;
	// default 8, serf's.
	CoordinateDims int
	// Authorize, if set, decides the endpoints the agent answers itself
	// (agentacl.go) instead of the backend's tables: a client agent's,
	// which has none, asks a server. Node is then the agent's node.
	Authorize Authorize
	// AuthorizeAll, if set with Authorize, decides a filtered list's
	// permissions at once.
	AuthorizeAll AuthorizeAll
	Node         string
}

// BuildInfo is the binary's VCS stamp.
type BuildInfo struct {
	Revision string
	Date     time.Time // zero: unknown
}

// Defaults taken from Consul's agent configuration (CONSUL.md §7).
const (
	maxQueryTime     = 600 * time.Second
	defaultQueryTime = 300 * time.Second
	jitterFraction   = 16
)

// LongestBlock is the longest a blocking read may park: the capped wait
// plus the most jitter can add. A server's write deadline for a blocking
// read must allow this much.
func LongestBlock() time.Duration {
	return maxQueryTime + maxQueryTime/jitterFraction
}

// New returns the HTTP API over b.
func New(b server.Backend, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Datacenter == "" {
		opts.Datacenter = "dc1"
	}
	h := &handler{b: b, opts: opts, order: newShuffler(b.NodeName())}
	h.routes = h.withDCCheck(slices.Concat(h.routeTable(), h.aclRoutes(), h.coordinateRoutes())) // aclendpoints.go, coordinate.go
	return h
}

type handler struct {
	b      server.Backend
	opts   Options
	routes []route
	order  *shuffler // the order of a prepared query's instances
}

// route is one endpoint. A prefix route passes the rest of the path as the
// call's argument (a key, a session ID, a node name).
type route struct {
	path    string
	prefix  bool
	methods []string
	serve   func(c *call) error
}

const (
	get  = http.MethodGet
	put  = http.MethodPut
	del  = http.MethodDelete
	post = http.MethodPost
)

func (h *handler) routeTable() []route {
	return []route{
		{"/v1/session/create", false, []string{put}, h.sessionCreate},
		{"/v1/session/destroy/", true, []string{put}, h.sessionDestroy},
		{"/v1/session/renew/", true, []string{put}, h.sessionRenew},
		{"/v1/session/info/", true, []string{get}, h.sessionInfo},
		{"/v1/session/node/", true, []string{get}, h.sessionNode},
		{"/v1/session/list", false, []string{get}, h.sessionList},
		{"/v1/kv/", true, []string{get, put, del}, h.kv},
		{"/v1/txn", false, []string{put}, h.txn},
		{"/v1/catalog/register", false, []string{put}, h.catalogRegister},
		{"/v1/catalog/deregister", false, []string{put}, h.catalogDeregister},
		{"/v1/catalog/nodes", false, []string{get}, h.catalogNodes},
		{"/v1/catalog/node/", true, []string{get}, h.catalogNode},
		{"/v1/catalog/services", false, []string{get}, h.catalogServices},
		{"/v1/catalog/service/", true, []string{get}, h.catalogService},
		{"/v1/catalog/node-services/", true, []string{get}, h.catalogNodeServices},
		{"/v1/health/node/", true, []string{get}, h.healthNode},
		{"/v1/health/service/", true, []string{get}, h.healthService},
		{"/v1/health/checks/", true, []string{get}, h.healthChecks},
		{"/v1/query", false, []string{get, post}, h.queryList},
		{"/v1/query/", true, []string{get, put, del}, h.querySpecific},
		{"/v1/health/state/", true, []string{get}, h.healthState},
		{"/v1/agent/self", false, []string{get}, h.agentSelf},
		{"/v1/agent/members", false, []string{get}, h.agentMembers},
		{"/v1/operator/autopilot/configuration", false, []string{get}, h.autopilotConfiguration},
		{"/v1/operator/raft/configuration", false, []string{get}, h.raftConfiguration},
		{"/v1/operator/raft/peer", false, []string{del}, h.raftRemovePeer},
		{"/v1/operator/keyring", false, []string{get, post, put, del}, h.operatorKeyring},
		{"/v1/catalog/datacenters", false, []string{get}, h.catalogDatacenters},
		{"/v1/agent/join/", true, []string{put}, h.agentJoin},
		{"/v1/agent/leave", false, []string{put}, h.agentLeave},
		{"/v1/agent/force-leave/", true, []string{put}, h.agentForceLeave},
		{"/v1/agent/check/pass/", true, []string{put}, h.agentCheck("passing")},
		{"/v1/agent/check/warn/", true, []string{put}, h.agentCheck("warning")},
		{"/v1/agent/check/fail/", true, []string{put}, h.agentCheck("critical")},
		{"/v1/status/leader", false, []string{get}, h.statusLeader},
		{"/v1/status/peers", false, []string{get}, h.statusPeers},
	}
}

// call is one request being served.
type call struct {
	w   http.ResponseWriter
	r   *http.Request
	arg string // the path after a prefix route
	// params is r's query, parsed once: a request asks for it up to four
	// times, and parsing was 6 % of a loaded leader's CPU.
	params url.Values
}

// query is the request's query parameters; callers must not change them.
func (c *call) query() url.Values {
	if c.params == nil {
		c.params = c.r.URL.Query()
	}
	return c.params
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.awaitACLTerm(r) // acl.go
	if !serveRoute(h.routes, w, r, h.opts.Logger) {
		http.NotFound(w, r)
	}
}

// serveRoute answers r by the first route that matches its path and says
// whether one did.
func serveRoute(routes []route, w http.ResponseWriter, r *http.Request, logger hclog.Logger) bool {
	path := r.URL.Path
	var rt *route
	for i := range routes {
		cand := &routes[i]
		if path == cand.path || (cand.prefix && strings.HasPrefix(path, cand.path)) {
			rt = cand
			break
		}
	}
	if rt == nil {
		return false
	}
	// Consul lists OPTIONS first in Allow and answers it with the header only.
	allow := append([]string{http.MethodOptions}, rt.methods...)
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", strings.Join(allow, ","))
		return true
	}
	if !slices.Contains(rt.methods, r.Method) {
		err := &apiError{status: http.StatusMethodNotAllowed, msg: fmt.Sprintf("method %s not allowed", r.Method), allow: allow}
		logRequestError(logger, r, err)
		writeError(w, err)
		return true
	}
	c := &call{w: w, r: r, arg: strings.TrimPrefix(path, rt.path)}
	if err := rt.serve(c); err != nil {
		logRequestError(logger, r, err)
		writeError(w, err)
	}
	return true
}

// writeJSON answers 200 (or status) with v as JSON; ?pretty indents it as Consul does.
func writeJSON(c *call, status int, v any) error {
	var buf []byte
	var err error
	if _, pretty := c.query()["pretty"]; pretty {
		buf, err = json.MarshalIndent(v, "", "    ")
		buf = append(buf, '\n')
	} else {
		buf, err = json.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	_, _ = c.w.Write(buf)
	return nil
}

// readBody reads the whole request body, refusing more than limit bytes
// with tooLarge(n), where n is the declared or counted size.
func readBody(c *call, limit int64, tooLarge func(n int64) error) ([]byte, error) {
	if c.r.ContentLength > limit {
		return nil, tooLarge(c.r.ContentLength)
	}
	if c.r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(c.r.Body, limit+1))
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Failed to read body: %v", err)
	}
	if int64(len(body)) > limit {
		// Count the rest so the reason states the real size, within reason.
		rest, _ := io.Copy(io.Discard, io.LimitReader(c.r.Body, 64<<20))
		return nil, tooLarge(int64(len(body)) + rest)
	}
	return body, nil
}
