package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// Services and prepared queries (S55-S60). Service names are unique per run
// and case, like node names; queries are deleted after the case unless
// their session took them first.

// ServiceName returns a service name unique to this run and case.
func (t *caseT) ServiceName(name string) string {
	return fmt.Sprintf("conf-%s-%d-%s", t.env.runID, t.seq, name)
}

// RegisterService registers service id (named name, with tags) on node,
// which RegisterNode made, together with checks of that service, in one
// catalog write.
func (t *caseT) RegisterService(node, id, name string, tags []string, checks ...checkSpec) {
	cs := make([]map[string]any, 0, len(checks))
	for _, c := range checks {
		body := checkBody(node, c)
		body["ServiceID"] = id
		cs = append(cs, body)
	}
	t.catalog("register", map[string]any{"Node": node, "Address": "127.0.0.1",
		"Service": map[string]any{"ID": id, "Service": name, "Tags": tags, "Port": 8080}, "Checks": cs})
}

// SetServiceCheck registers (or updates) a check of service id on node.
func (t *caseT) SetServiceCheck(node, serviceID, id, status string) {
	body := checkBody(node, checkSpec{ID: id, Status: status})
	body["ServiceID"] = serviceID
	t.catalog("register", map[string]any{"Node": node, "Address": "127.0.0.1", "Check": body})
}

// DeregisterService removes a service, and so its checks, from node.
func (t *caseT) DeregisterService(node, id string) {
	t.catalog("deregister", map[string]any{"Node": node, "ServiceID": id})
}

// HealthService reads /v1/health/service/<name> (extra is a query string)
// and returns the nodes of the entries, sorted.
func (t *caseT) HealthService(name, extra string) []string {
	p := "/v1/health/service/" + url.PathEscape(name)
	if extra != "" {
		p += "?" + extra
	}
	r := t.Do(http.MethodGet, p, nil)
	if r.Code != 200 {
		t.Fatalf("health service %s: want 200, got %s", name, r)
	}
	var entries []struct {
		Node    struct{ Node string }
		Service struct{ ID, Service string }
		Checks  []struct{ CheckID, Status, ServiceID string }
	}
	t.decode("health service", r, &entries)
	var out []string
	for _, e := range entries {
		out = append(out, e.Node.Node)
	}
	slices.Sort(out)
	return out
}

// CreateQueryRaw posts a prepared-query definition and returns the raw
// answer; a query it does create is deleted after the case.
func (t *caseT) CreateQueryRaw(def map[string]any) *resp {
	r := t.DoJSON(http.MethodPost, "/v1/query", def)
	if r.Code == 200 {
		var out struct{ ID string }
		if json.Unmarshal(r.Body, &out) == nil && out.ID != "" {
			t.deleteQueryLater(out.ID)
		}
	}
	return r
}

func (t *caseT) deleteQueryLater(id string) {
	t.Cleanup(func(ctx context.Context) error {
		r, err := t.env.do(ctx, http.MethodGet, "/v1/query/"+id, nil)
		if err != nil || r.Code == 404 {
			return err // gone with its session already
		}
		if r, err = t.env.do(ctx, http.MethodDelete, "/v1/query/"+id, nil); err != nil {
			return err
		}
		if r.Code != 200 {
			return fmt.Errorf("delete query %s: %s", id, r)
		}
		return nil
	})
}

// CreateQuery creates a prepared query and returns its ID.
func (t *caseT) CreateQuery(def map[string]any) string {
	r := t.CreateQueryRaw(def)
	if r.Code != 200 {
		t.Fatalf("create query %v: want 200, got %s", def, r)
	}
	var out struct{ ID string }
	t.decode("create query", r, &out)
	if out.ID == "" {
		t.Fatalf("create query: empty ID in %s", r)
	}
	return out.ID
}

// queryDef is what a read of one query shows.
type queryDef struct {
	ID, Name, Session        string
	Service                  struct{ Service string }
	CreateIndex, ModifyIndex uint64
}

// Query reads a prepared query by ID: nil when it does not exist (404).
func (t *caseT) Query(id string) *queryDef {
	r := t.Do(http.MethodGet, "/v1/query/"+url.PathEscape(id), nil)
	switch r.Code {
	case 404:
		return nil
	case 200:
		var out []queryDef
		t.decode("query "+id, r, &out)
		if len(out) != 1 {
			t.Fatalf("query %s: want one query, got %s", id, r)
		}
		return &out[0]
	}
	t.Fatalf("query %s: want 200 or 404, got %s", id, r)
	return nil
}

// Execute runs a prepared query by ID or name and returns the nodes of
// its answer, sorted (Consul shuffles them).
func (t *caseT) Execute(idOrName string) []string {
	r := t.Do(http.MethodGet, "/v1/query/"+url.PathEscape(idOrName)+"/execute", nil)
	if r.Code != 200 {
		t.Fatalf("execute %s: want 200, got %s", idOrName, r)
	}
	var out struct {
		Service string
		Nodes   []struct{ Node struct{ Node string } }
	}
	t.decode("execute "+idOrName, r, &out)
	var nodes []string
	for _, n := range out.Nodes {
		nodes = append(nodes, n.Node.Node)
	}
	slices.Sort(nodes)
	return nodes
}
