package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hashicorp/consul/api"
)

// checkSpec is a check for RegisterNode to put on a node.
type checkSpec struct{ ID, Status string }

func checkBody(node string, c checkSpec) map[string]any {
	return map[string]any{"Node": node, "CheckID": c.ID, "Name": c.ID, "Status": c.Status}
}

// RegisterNode registers a node unique to this run and case, with the given
// checks, and deregisters it after the case. It returns the node's name.
func (t *caseT) RegisterNode(name string, checks ...checkSpec) string {
	node := fmt.Sprintf("conf-%s-%d-%s", t.env.runID, t.seq, name)
	cs := make([]map[string]any, 0, len(checks))
	for _, c := range checks {
		cs = append(cs, checkBody(node, c))
	}
	t.Cleanup(func(ctx context.Context) error {
		b, _ := json.Marshal(map[string]any{"Node": node})
		r, err := t.env.do(ctx, http.MethodPut, "/v1/catalog/deregister", b)
		if err != nil {
			return err
		}
		if r.Code != 200 {
			return fmt.Errorf("deregister node %s: %s", node, r)
		}
		return nil
	})
	t.catalog("register", map[string]any{"Node": node, "Address": "127.0.0.1", "Checks": cs})
	return node
}

// SetCheck registers (or updates) one check on node with a status.
func (t *caseT) SetCheck(node, id, status string) {
	t.catalog("register", map[string]any{"Node": node, "Address": "127.0.0.1",
		"Check": checkBody(node, checkSpec{ID: id, Status: status})})
}

// DeregisterCheck removes one check from node.
func (t *caseT) DeregisterCheck(node, id string) {
	t.catalog("deregister", map[string]any{"Node": node, "CheckID": id})
}

// DeregisterNode removes a node.
func (t *caseT) DeregisterNode(node string) {
	t.catalog("deregister", map[string]any{"Node": node})
}

func (t *caseT) catalog(op string, body map[string]any) {
	r := t.DoJSON(http.MethodPut, "/v1/catalog/"+op, body)
	if r.Code != 200 || r.Text() != "true" {
		t.Fatalf("catalog %s %v: want 200 true, got %s", op, body, r)
	}
}

// NodeChecks reads a node's health checks (ID → check).
func (t *caseT) NodeChecks(node string) map[string]*api.HealthCheck {
	r := t.Do(http.MethodGet, "/v1/health/node/"+url.PathEscape(node), nil)
	if r.Code != 200 {
		t.Fatalf("health node %s: want 200, got %s", node, r)
	}
	var hc []*api.HealthCheck
	t.decode("health node", r, &hc)
	out := map[string]*api.HealthCheck{}
	for _, c := range hc {
		out[c.CheckID] = c
	}
	return out
}

// HomeNode returns the case's own node, registered on first use with no
// checks.
func (t *caseT) HomeNode() string {
	t.mu.Lock()
	home := t.home
	t.mu.Unlock()
	if home == "" {
		home = t.RegisterNode("home")
		t.mu.Lock()
		t.home = home
		t.mu.Unlock()
	}
	return home
}
