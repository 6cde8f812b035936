package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/impl/internal/local"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// apiCatalog is the local.Catalog of an agent: anti-entropy reaches the
// servers through the same HTTP API a client uses, as Consul's agent reaches
// them over RPC. A client agent forwards it to the server port of a server
// it knows from gossip; a server agent runs it on its own API in process,
// which forwards writes to the leader. Each write is one catalog register or
// deregister, so one raft entry.
type apiCatalog struct {
	// address is what the catalog records for the node. It must be what
	// the leader's gossip reconcile (or a gossip-less server's
	// self-registration) records, the agent's gossip IP, or each sync
	// would rewrite the node and the reconcile would write it back.
	address string
	// node is the agent's node, the origin of its requests.
	node string
	fwd  rpc.Forwarder
	// servers lists where requests may go, in preference order; the first
	// that answers at all is used.
	servers func() []string
	// local fills in what the catalog does not store (weights, tag
	// override, check intervals) from the agent's own state, so that a full
	// sync compares only what the catalog keeps and does not rewrite an
	// unchanged entry every period.
	local func() *local.State
	// tokens are what each request carries (ownTokens); the zero value,
	// for ACLs off, carries none.
	tokens  ownTokens
	timeout time.Duration
}

// catalogTimeout bounds one anti-entropy request.
const catalogTimeout = 10 * time.Second

// errNoServers is a sync attempted before any server is known.
var errNoServers = errors.New("No known Consul servers") //lint:ignore ST1005 Consul's words

// Register implements local.Catalog: the write carries token, which the
// Syncer chose (ownTokens.register).
func (c *apiCatalog) Register(node string, svc *local.Service, checks []local.Check, token string) error {
	// SkipNodeUpdate: the node itself (address, ID, meta) is the gossip
	// reconcile's and the operator's to write, not each service sync's, as
	// in Consul's agent once its node info is in sync (S62).
	body := catalogwire.Register{Node: node, Address: c.address, SkipNodeUpdate: true}
	if svc != nil {
		proxy, err := catalogwire.DecodeProxy(svc.Proxy)
		if err != nil {
			return fmt.Errorf("service %q: stored proxy configuration: %w", svc.ID, err)
		}
		w := model.Weights(svc.Weights)
		body.Service = &catalogwire.Service{Kind: svc.Kind, ID: svc.ID, Service: svc.Service, Tags: svc.Tags,
			Address: svc.Address, TaggedAddresses: svc.TaggedAddresses, Port: svc.Port, Ports: svc.Ports,
			SocketPath: svc.SocketPath, Meta: svc.Meta, Weights: &w, EnableTagOverride: svc.EnableTagOverride,
			Locality: svc.Locality, Proxy: proxy}
	}
	for _, ch := range checks {
		body.Checks = append(body.Checks, &catalogwire.Check{Node: node, CheckID: ch.CheckID, Name: ch.Name,
			Status: model.Health(ch.Status), Notes: ch.Notes, Output: ch.Output, ServiceID: ch.ServiceID, Type: ch.Type})
	}
	return c.write("/v1/catalog/register", body, func() string { return token })
}

// RegisterNode implements local.NodeCatalog: the node's record alone,
// without SkipNodeUpdate, so it replaces what the catalog has (S62).
func (c *apiCatalog) RegisterNode(node string, info local.NodeInfo) error {
	return c.write("/v1/catalog/register", catalogwire.Register{ID: info.ID, Node: node, Address: c.address,
		TaggedAddresses: info.TaggedAddresses, NodeMeta: info.Meta}, c.tokens.agent)
}

// DeregisterService implements local.Catalog.
func (c *apiCatalog) DeregisterService(node, id string) error {
	return c.write("/v1/catalog/deregister", catalogwire.Deregister{Node: node, ServiceID: id}, c.tokens.agent)
}

// DeregisterCheck implements local.Catalog.
func (c *apiCatalog) DeregisterCheck(node, id string) error {
	return c.write("/v1/catalog/deregister", catalogwire.Deregister{Node: node, CheckID: id}, c.tokens.agent)
}

// NodeServices implements local.Catalog.
func (c *apiCatalog) NodeServices(node string) ([]local.Service, error) {
	_, _, svcs, err := c.NodeAndServices(node)
	return svcs, err
}

// NodeAndServices implements local.NodeCatalog: one read of the node's
// record and services, as Consul's agent reads them.
func (c *apiCatalog) NodeAndServices(node string) (local.NodeInfo, bool, []local.Service, error) {
	var ans struct {
		Node *struct {
			ID              string
			TaggedAddresses map[string]string
			Meta            map[string]string
		}
		Services []catalogwire.Service
	}
	if err := c.read("/v1/catalog/node-services/"+url.PathEscape(node), &ans); err != nil {
		return local.NodeInfo{}, false, nil, err
	}
	out := make([]local.Service, 0, len(ans.Services))
	for _, s := range ans.Services {
		// The catalog keeps every field (S74); the stored form of the
		// proxy is what the agent keeps too, so an unchanged service
		// compares equal.
		d, err := s.Details()
		if err != nil {
			return local.NodeInfo{}, false, nil, fmt.Errorf("service %q: %w", s.ID, err)
		}
		w := local.Weights{Passing: 1, Warning: 1}
		if s.Weights != nil {
			w = local.Weights(*s.Weights)
		}
		out = append(out, local.Service{ID: s.ID, Service: s.Service, Tags: s.Tags, Address: s.Address, Port: s.Port,
			Meta: s.Meta, EnableTagOverride: s.EnableTagOverride, Weights: w, Kind: s.Kind,
			TaggedAddresses: d.TaggedAddresses, Ports: d.Ports, SocketPath: s.SocketPath, Locality: s.Locality,
			Proxy: d.Proxy})
	}
	if ans.Node == nil {
		return local.NodeInfo{}, false, out, nil
	}
	info := local.NodeInfo{ID: ans.Node.ID, TaggedAddresses: ans.Node.TaggedAddresses, Meta: ans.Node.Meta}
	return info, true, out, nil
}

// NodeChecks implements local.Catalog.
func (c *apiCatalog) NodeChecks(node string) ([]local.Check, error) {
	var ans []local.Check
	if err := c.read("/v1/health/node/"+url.PathEscape(node), &ans); err != nil {
		return nil, err
	}
	st := c.local()
	for i := range ans {
		if mine, ok := st.Check(ans[i].CheckID); ok {
			ans[i].Interval, ans[i].Timeout = mine.Interval, mine.Timeout
		}
	}
	return ans, nil
}

// write sends body to path with the token token returns.
func (c *apiCatalog) write(path string, body any, token func() string) error {
	buf, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	status, out, err := c.do(http.MethodPut, path, buf, token)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return answerError(path, status, out)
	}
	return nil
}

// read is a GET of path with the agent token, as Consul's full sync reads.
func (c *apiCatalog) read(path string, into any) error {
	status, out, err := c.do(http.MethodGet, path, nil, c.tokens.agent)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return answerError(path, status, out)
	}
	if err := json.Unmarshal(out, into); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// answerError maps a refusal to the errors the Syncer knows.
func answerError(path string, status int, body []byte) error {
	msg := strings.TrimSpace(string(body))
	err := fmt.Errorf("%s: %d %s", path, status, msg)
	switch {
	case status == http.StatusForbidden || strings.HasPrefix(msg, "Permission denied"):
		return fmt.Errorf("%w: %w", local.ErrPermissionDenied, err)
	case strings.HasPrefix(msg, "Unknown service") || strings.HasPrefix(msg, "Unknown check"):
		return fmt.Errorf("%w: %w", local.ErrNotFound, err)
	}
	return err
}

// do sends one request to the first server that answers.
func (c *apiCatalog) do(method, path string, body []byte, token func() string) (int, []byte, error) {
	servers := c.servers()
	if len(servers) == 0 {
		return 0, nil, errNoServers
	}
	secret := ""
	if token != nil {
		secret = token()
	}
	var errs []error
	for _, addr := range servers {
		status, out, err := c.once(addr, method, path, body, secret)
		if err == nil {
			return status, out, nil
		}
		errs = append(errs, err)
	}
	return 0, nil, errors.Join(errs...)
}

func (c *apiCatalog) once(addr, method, path string, body []byte, secret string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	req := &rpc.Request{Origin: rpc.Origin{Node: c.node, Token: secret}, Method: method, URI: path, Body: body}
	if body != nil {
		req.Header = http.Header{"Content-Type": {"application/json"}}
	}
	resp, err := c.fwd.Forward(ctx, addr, req)
	if err != nil {
		return 0, nil, fmt.Errorf("anti-entropy request to %s: %w", addr, err)
	}
	return resp.Status, resp.Body, nil
}
