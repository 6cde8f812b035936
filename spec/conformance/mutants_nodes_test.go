package conformance

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/go-uuid"
)

// Mutants of the node rules (S62), of the servers' consul service (S53)
// and of the agents' node records (S63), one per way a server or agent
// could get them wrong; each must fail the case named by its filter.
var nodeMutants = []mutant{
	{name: "node-meta-dropped", filter: `^S62/register-replaces`,
		prepare: func(x *exchange) {
			if x.r.URL.Path == "/v1/catalog/register" {
				rewriteJSON(x, func(v any) any {
					if m, ok := v.(map[string]any); ok {
						delete(m, "NodeMeta")
						delete(m, "TaggedAddresses")
					}
					return v
				})
			}
		}},
	{name: "register-merges-node-meta", filter: `^S62/register-replaces`, handle: mergeNodeMeta},
	{name: "rename-keeps-sessions", filter: `^S62/node-id-rename`, handle: keepEverySession},
	{name: "live-node-name-taken", filter: `^S62/live-node`,
		handle: func(_ *mstate, x *exchange) (bool, error) {
			if x.r.URL.Path != "/v1/catalog/register" {
				return false, nil
			}
			err := x.forward()
			if err == nil && x.code >= 400 && strings.Contains(string(x.out), "is reserved by node") {
				x.code, x.out = 200, []byte("true")
			}
			return true, err
		}},
	{name: "catalog-node-without-id", filter: `^S62/agent-node`,
		handle: editCatalogNode(func(node map[string]any) { node["ID"] = "" })},
	{name: "no-consul-service", filter: `^S53/server-node`,
		handle: func(_ *mstate, x *exchange) (bool, error) {
			if x.r.URL.Path != "/v1/health/service/consul" {
				return false, nil
			}
			x.code, x.header, x.out = 200, http.Header{"Content-Type": {"application/json"}}, []byte("[]")
			return true, nil
		}},
	// An agent that never writes its node record leaves the node as the
	// gossip reconcile made it: no tagged addresses, and only the version
	// in its meta. Shown on the catalog's answer, since the agent's own
	// writes go to the server port, past the proxy.
	{name: "agent-node-record-not-kept", filter: `^S63/agent-node`, agents: true,
		handle: editCatalogNode(func(node map[string]any) {
			meta, _ := node["Meta"].(map[string]any)
			node["Meta"] = map[string]any{"consul-version": meta["consul-version"]}
			node["TaggedAddresses"] = nil
		})},
	{name: "node-names-case-sensitive", filter: `^S62/node-names`, handle: caseSensitiveNodes},
	{name: "bad-node-id-accepted", filter: `^S62/bad-node-id`,
		prepare: func(x *exchange) {
			if x.r.URL.Path == "/v1/catalog/register" {
				rewriteJSON(x, func(v any) any {
					if m, ok := v.(map[string]any); ok {
						if id, _ := m["ID"].(string); id != "" {
							if _, err := uuid.ParseUUID(id); err != nil {
								delete(m, "ID")
							}
						}
					}
					return v
				})
			}
		}},
}

// The mutant list is split by topic; the node mutants join it here.
func init() { mutants = append(mutants, nodeMutants...) }

// editCatalogNode is a mutant that changes the node record in every answer
// of GET /v1/catalog/node/<name>.
func editCatalogNode(edit func(node map[string]any)) func(*mstate, *exchange) (bool, error) {
	return func(_ *mstate, x *exchange) (bool, error) {
		if !strings.HasPrefix(x.r.URL.Path, "/v1/catalog/node/") {
			return false, nil
		}
		err := x.forward()
		if err == nil && x.code == 200 {
			var v struct{ Node map[string]any }
			if json.Unmarshal(x.out, &v) == nil && v.Node != nil {
				edit(v.Node)
				x.out, err = json.Marshal(v)
			}
		}
		return true, err
	}
}

// mergeNodeMeta is a server whose register keeps the meta and tagged
// addresses a node had when the register leaves them out, instead of
// clearing them.
func mergeNodeMeta(_ *mstate, x *exchange) (bool, error) {
	if x.r.URL.Path != "/v1/catalog/register" {
		return false, nil
	}
	var reg map[string]any
	if json.Unmarshal(x.body, &reg) != nil {
		return false, nil
	}
	node, _ := reg["Node"].(string)
	code, _, body, err := x.u.fwd(x.r.Context(), http.MethodGet, "/v1/catalog/node/"+url.PathEscape(node), x.r.Header, nil)
	if err != nil || code != 200 {
		return true, err
	}
	var cur struct {
		Node *struct{ Meta, TaggedAddresses map[string]string }
	}
	if json.Unmarshal(body, &cur) != nil || cur.Node == nil {
		return false, nil
	}
	if _, ok := reg["NodeMeta"]; !ok && cur.Node.Meta != nil {
		reg["NodeMeta"] = cur.Node.Meta
	}
	if _, ok := reg["TaggedAddresses"]; !ok && cur.Node.TaggedAddresses != nil {
		reg["TaggedAddresses"] = cur.Node.TaggedAddresses
	}
	if x.body, err = json.Marshal(reg); err != nil {
		return true, err
	}
	return false, nil
}

// keepEverySession is a server that never lets a session go: each session
// reads as it was created, whatever happened to its node since.
func keepEverySession(m *mstate, x *exchange) (bool, error) {
	return keepSessions(m, x, func([]byte) bool { return true })
}

// caseSensitiveNodes is a server whose node names compare exactly: a
// session create naming a node by another spelling is refused, as a node
// that does not exist.
func caseSensitiveNodes(_ *mstate, x *exchange) (bool, error) {
	if x.r.URL.Path != "/v1/session/create" {
		return false, nil
	}
	var body struct{ Node string }
	if json.Unmarshal(x.body, &body) != nil || body.Node == "" {
		return false, nil
	}
	code, _, out, err := x.u.fwd(x.r.Context(), http.MethodGet, "/v1/catalog/nodes", x.r.Header, nil)
	if err != nil || code != 200 {
		return true, err
	}
	var nodes []struct{ Node string }
	if json.Unmarshal(out, &nodes) != nil {
		return false, nil
	}
	for _, n := range nodes {
		if n.Node == body.Node {
			return false, nil
		}
	}
	x.code, x.header, x.out = 500, http.Header{}, []byte("Missing node registration")
	return true, nil
}
