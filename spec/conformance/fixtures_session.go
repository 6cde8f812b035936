package conformance

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hashicorp/consul/api"
)

// CreateSessionRaw sends a session create body as is and returns the raw
// answer; a session it does create is destroyed after the case.
func (t *caseT) CreateSessionRaw(body any) *resp {
	r := t.DoJSON(http.MethodPut, "/v1/session/create", body)
	if r.Code == 200 {
		var out struct{ ID string }
		if json.Unmarshal(r.Body, &out) == nil && out.ID != "" {
			t.destroyLater(out.ID)
		}
	}
	return r
}

func (t *caseT) destroyLater(id string) {
	t.Cleanup(func(ctx context.Context) error {
		r, err := t.env.do(ctx, http.MethodPut, "/v1/session/destroy/"+id, nil)
		if err != nil {
			return err
		}
		if r.Code != 200 {
			return fmt.Errorf("destroy session %s: %s", id, r)
		}
		return nil
	})
}

// CreateSession creates a session and returns its ID. fields is the JSON
// body; when it has no LockDelay, "0s" is sent so that cases not about
// lock-delay are not slowed by the 15s default. Name defaults to the case ID.
func (t *caseT) CreateSession(fields map[string]any) string {
	body := map[string]any{"LockDelay": "0s", "Name": t.c.ID()}
	for k, v := range fields {
		body[k] = v
	}
	r := t.CreateSessionRaw(body)
	if r.Code != 200 {
		t.Fatalf("session create %v: want 200, got %s", body, r)
	}
	var out struct{ ID string }
	t.decode("session create", r, &out)
	if out.ID == "" {
		t.Fatalf("session create: empty ID in %s", r)
	}
	return out.ID
}

// CreateSessionOn creates a session on node bound to exactly the given checks.
func (t *caseT) CreateSessionOn(node string, checks []string, fields map[string]any) string {
	if checks == nil {
		checks = []string{}
	}
	body := map[string]any{"Node": node, "NodeChecks": checks}
	for k, v := range fields {
		body[k] = v
	}
	return t.CreateSession(body)
}

// SessionInfo reads a session: nil when it does not exist.
func (t *caseT) SessionInfo(id string) *api.SessionEntry {
	r := t.Do(http.MethodGet, "/v1/session/info/"+id, nil)
	if r.Code != 200 {
		t.Fatalf("session info %s: want 200, got %s", id, r)
	}
	var out []*api.SessionEntry
	t.decode("session info", r, &out)
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	t.Fatalf("session info %s: want at most one session, got %d", id, len(out))
	return nil
}

// Alive reports whether the session exists.
func (t *caseT) Alive(id string) bool { return t.SessionInfo(id) != nil }

// Destroy destroys a session; it must answer 200 true.
func (t *caseT) Destroy(id string) {
	r := t.Do(http.MethodPut, "/v1/session/destroy/"+id, nil)
	if r.Code != 200 || r.Text() != "true" {
		t.Fatalf("destroy %s: want 200 true, got %s", id, r)
	}
}

// NodeSessions lists the sessions of a node.
func (t *caseT) NodeSessions(node string) []*api.SessionEntry {
	r := t.Do(http.MethodGet, "/v1/session/node/"+url.PathEscape(node), nil)
	if r.Code != 200 {
		t.Fatalf("session node %s: want 200, got %s", node, r)
	}
	var out []*api.SessionEntry
	t.decode("session node", r, &out)
	return out
}

// CreateUnboundSession creates a session on the case's own node bound to
// no checks, so it
// lives until destroyed (or its TTL runs out).
func (t *caseT) CreateUnboundSession(fields map[string]any) string {
	return t.CreateSessionOn(t.HomeNode(), nil, fields)
}

// fakeID returns a random UUID that names no session.
func fakeID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // cannot happen on supported platforms
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
