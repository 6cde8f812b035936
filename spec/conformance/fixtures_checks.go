package conformance

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
)

// Agent checks, services and maintenance (CONSUL.md §15): these act on
// the agent the suite talks to, on its own node, so every ID is unique per
// run and case and everything registered is deregistered after the case.

// AgentNode is the node name of the agent under test.
func (t *caseT) AgentNode() string {
	r := t.Do(http.MethodGet, "/v1/agent/self", nil)
	if r.Code != 200 {
		t.Fatalf("agent self: want 200, got %s", r)
	}
	var self struct{ Config struct{ NodeName string } }
	t.decode("agent self", r, &self)
	if self.Config.NodeName == "" {
		t.Fatalf("agent self names no node: %s", r)
	}
	return self.Config.NodeName
}

// agentPut sends a PUT to an agent endpoint and stops the case unless it
// answers 200.
func (t *caseT) agentPut(path string, body any) {
	var r *resp
	if body == nil {
		r = t.Do(http.MethodPut, path, nil)
	} else {
		r = t.DoJSON(http.MethodPut, path, body)
	}
	if r.Code != 200 {
		t.Fatalf("PUT %s %v: want 200, got %s", path, body, r)
	}
}

// RegisterAgentCheck registers a check on the agent (def is the register
// body; its ID is set to a name unique to the case) and deregisters it
// after the case. It returns the check's ID.
func (t *caseT) RegisterAgentCheck(name string, def map[string]any) string {
	id := t.ServiceName(name)
	body := map[string]any{"ID": id, "Name": id}
	for k, v := range def {
		body[k] = v
	}
	t.agentCleanup("/v1/agent/check/deregister/" + url.PathEscape(id))
	t.agentPut("/v1/agent/check/register", body)
	return id
}

// RegisterAgentService registers a service on the agent with the given
// extra fields (Check, Checks…) and deregisters it after the case. It
// returns the service's ID, which is also its name.
func (t *caseT) RegisterAgentService(name string, fields map[string]any) string {
	id := t.ServiceName(name)
	body := map[string]any{"ID": id, "Name": id}
	for k, v := range fields {
		body[k] = v
	}
	t.agentCleanup("/v1/agent/service/deregister/" + url.PathEscape(id))
	t.agentPut("/v1/agent/service/register", body)
	return id
}

// agentCleanup PUTs path after the case; a 404 means the case removed the
// entry itself.
func (t *caseT) agentCleanup(path string) {
	t.Cleanup(func(ctx context.Context) error {
		r, err := t.env.do(ctx, http.MethodPut, path, nil)
		if err != nil {
			return err
		}
		if r.Code != 200 && r.Code != 404 {
			return fmt.Errorf("PUT %s: %s", path, r)
		}
		return nil
	})
}

// CatalogCheckStatus is the status of a check of node in the catalog, ""
// when the catalog does not have it.
func (t *caseT) CatalogCheckStatus(node, id string) string {
	if c := t.NodeChecks(node)[id]; c != nil {
		return c.Status
	}
	return ""
}

// httpTarget is an HTTP server on 127.0.0.1 for an agent's HTTP check to
// probe: it answers 200 until Fail, then 503.
type httpTarget struct {
	URL     string
	failing atomic.Bool
}

// Fail makes every later probe fail.
func (h *httpTarget) Fail() { h.failing.Store(true) }

// StartHTTPTarget starts a target, stopped after the case. The agent must
// run on this host (the suite's agents listen on 127.0.0.1).
func (t *caseT) StartHTTPTarget() *httpTarget {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("HTTP check target: %v", err)
	}
	h := &httpTarget{URL: "http://" + ln.Addr().String() + "/health"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.failing.Load() {
			http.Error(w, "failing on purpose", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func(context.Context) error { return srv.Close() })
	return h
}
