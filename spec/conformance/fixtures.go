package conformance

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"time"

	"github.com/hashicorp/consul/api"
)

// Fixtures: every helper here speaks Consul's HTTP API, fails the case on a
// transport error or an unexpected answer, and registers the cleanup of what
// it creates. Names are unique per run and case so cases can run in parallel.

// Do sends one request and stops the case on a transport error.
func (t *T) Do(method, path string, body []byte) *resp {
	r, err := t.env.do(t.ctx, method, path, body)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return r
}

// DoJSON sends v encoded as JSON.
func (t *T) DoJSON(method, path string, v any) *resp {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %s body: %v", path, err)
	}
	return t.Do(method, path, b)
}

// decode unmarshals r's body into v or stops the case.
func (t *T) decode(what string, r *resp, v any) {
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s: cannot decode %s: %v", what, r, err)
	}
}

// ---- assertions ----

// Equal records a failure unless got and want are deeply equal.
func (t *T) Equal(what string, got, want any) bool {
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %s, want %s", what, show(got), show(want))
		return false
	}
	return true
}

// show formats a value for a failure message: strings quoted, numbers in
// decimal, structs with field names.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprintf("%+v", v)
}

// Check records a failure with the message unless ok.
func (t *T) Check(ok bool, format string, args ...any) bool {
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}

// Require stops the case with the message unless ok.
func (t *T) Require(ok bool, format string, args ...any) {
	if !ok {
		t.Fatalf(format, args...)
	}
}

// WaitFor polls cond every interval until it holds and returns the time it
// was first seen to hold; it stops the case after timeout.
func (t *T) WaitFor(what string, timeout, interval time.Duration, cond func() bool) time.Time {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		t.Sleep(interval)
	}
}

// ---- KV ----

// Key returns a key under the case's private prefix; the prefix is deleted
// after the case.
func (t *T) Key(name string) string {
	t.mu.Lock()
	first := !t.prefixUsed
	t.prefixUsed = true
	t.mu.Unlock()
	if first {
		prefix := t.prefix
		t.Cleanup(func(ctx context.Context) error {
			r, err := t.env.do(ctx, http.MethodDelete, "/v1/kv/"+prefix+"?recurse", nil)
			if err != nil {
				return err
			}
			if r.Code != 200 {
				return fmt.Errorf("delete prefix %s: %s", prefix, r)
			}
			return nil
		})
	}
	return t.prefix + name
}

// Prefix is the case's private key prefix (ends in "/").
func (t *T) Prefix() string { return t.prefix }

// GetRaw reads a key; extra is a query string such as "index=5&wait=1s".
func (t *T) GetRaw(key, extra string) *resp {
	p := "/v1/kv/" + key
	if extra != "" {
		p += "?" + extra
	}
	return t.Do(http.MethodGet, p, nil)
}

// Get reads a key: nil when absent (404). The index is X-Consul-Index.
func (t *T) Get(key string) (*api.KVPair, uint64) {
	return t.getWith(key, "")
}

func (t *T) getWith(key, extra string) (*api.KVPair, uint64) {
	r := t.GetRaw(key, extra)
	switch r.Code {
	case 404:
		return nil, r.Index()
	case 200:
		var ps []*api.KVPair
		t.decode("GET "+key, r, &ps)
		if len(ps) != 1 {
			t.Fatalf("GET %s: want one entry, got %d", key, len(ps))
		}
		return ps[0], r.Index()
	}
	t.Fatalf("GET %s: unexpected answer %s", key, r)
	return nil, 0
}

// MustGet reads a key that must exist.
func (t *T) MustGet(key string) *api.KVPair {
	p, _ := t.Get(key)
	if p == nil {
		t.Fatalf("key %s unexpectedly absent", key)
	}
	return p
}

// List reads a prefix recursively: entries (nil on 404) and X-Consul-Index.
func (t *T) List(prefix string) ([]*api.KVPair, *resp) {
	r := t.GetRaw(prefix, "recurse")
	switch r.Code {
	case 404:
		return nil, r
	case 200:
		var ps []*api.KVPair
		t.decode("GET "+prefix+"?recurse", r, &ps)
		return ps, r
	}
	t.Fatalf("GET %s?recurse: unexpected answer %s", prefix, r)
	return nil, nil
}

// PutRaw writes a key with the given query (e.g. "acquire=<id>&flags=3").
func (t *T) PutRaw(key, value, query string) *resp {
	p := "/v1/kv/" + key
	if query != "" {
		p += "?" + query
	}
	return t.Do(http.MethodPut, p, []byte(value))
}

// PutBool writes a key and returns the boolean answer; anything but a 200
// with true/false stops the case.
func (t *T) PutBool(key, value, query string) bool {
	return t.boolAnswer("PUT "+key+"?"+query, t.PutRaw(key, value, query))
}

func (t *T) boolAnswer(what string, r *resp) bool {
	if r.Code != 200 {
		t.Fatalf("%s: want 200, got %s", what, r)
	}
	switch r.Text() {
	case "true":
		return true
	case "false":
		return false
	}
	t.Fatalf("%s: want body true or false, got %s", what, r)
	return false
}

// Set is a plain PUT; it must answer true.
func (t *T) Set(key, value string) {
	if !t.PutBool(key, value, "") {
		t.Fatalf("plain PUT of %s answered false", key)
	}
}

// Acquire is PUT ?acquire=sid.
func (t *T) Acquire(key, sid, value string) bool {
	return t.PutBool(key, value, "acquire="+url.QueryEscape(sid))
}

// Release is PUT ?release=sid.
func (t *T) Release(key, sid, value string) bool {
	return t.PutBool(key, value, "release="+url.QueryEscape(sid))
}

// CAS is PUT ?cas=index.
func (t *T) CAS(key, value string, index uint64) bool {
	return t.PutBool(key, value, "cas="+strconv.FormatUint(index, 10))
}

// Delete is DELETE with an optional query ("cas=5", "recurse").
func (t *T) Delete(key, query string) bool {
	p := "/v1/kv/" + key
	if query != "" {
		p += "?" + query
	}
	return t.boolAnswer("DELETE "+p, t.Do(http.MethodDelete, p, nil))
}

// ---- sessions ----

// TrySession sends a session create body as is and returns the raw answer;
// a session it does create is destroyed after the case.
func (t *T) TrySession(body any) *resp {
	r := t.DoJSON(http.MethodPut, "/v1/session/create", body)
	if r.Code == 200 {
		var out struct{ ID string }
		if json.Unmarshal(r.Body, &out) == nil && out.ID != "" {
			t.destroyLater(out.ID)
		}
	}
	return r
}

func (t *T) destroyLater(id string) {
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

// Session creates a session and returns its ID. fields is the JSON body;
// when it has no LockDelay, "0s" is sent so that cases not about lock-delay
// are not slowed by the 15s default. Name defaults to the case ID.
func (t *T) Session(fields map[string]any) string {
	body := map[string]any{"LockDelay": "0s", "Name": t.c.ID()}
	for k, v := range fields {
		body[k] = v
	}
	r := t.TrySession(body)
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

// NodeSession creates a session on node bound to exactly the given checks.
func (t *T) NodeSession(node string, checks []string, fields map[string]any) string {
	if checks == nil {
		checks = []string{}
	}
	body := map[string]any{"Node": node, "NodeChecks": checks}
	for k, v := range fields {
		body[k] = v
	}
	return t.Session(body)
}

// SessionInfo reads a session: nil when it does not exist.
func (t *T) SessionInfo(id string) *api.SessionEntry {
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
func (t *T) Alive(id string) bool { return t.SessionInfo(id) != nil }

// Destroy destroys a session; it must answer 200 true.
func (t *T) Destroy(id string) {
	r := t.Do(http.MethodPut, "/v1/session/destroy/"+id, nil)
	if r.Code != 200 || r.Text() != "true" {
		t.Fatalf("destroy %s: want 200 true, got %s", id, r)
	}
}

// NodeSessions lists the sessions of a node.
func (t *T) NodeSessions(node string) []*api.SessionEntry {
	r := t.Do(http.MethodGet, "/v1/session/node/"+url.PathEscape(node), nil)
	if r.Code != 200 {
		t.Fatalf("session node %s: want 200, got %s", node, r)
	}
	var out []*api.SessionEntry
	t.decode("session node", r, &out)
	return out
}

// ---- catalog ----

// Chk is a check to register on a node.
type Chk struct{ ID, Status string }

func checkBody(node string, c Chk) map[string]any {
	return map[string]any{"Node": node, "CheckID": c.ID, "Name": c.ID, "Status": c.Status}
}

// Node registers a node unique to this run and case, with the given checks,
// and deregisters it after the case. It returns the node's name.
func (t *T) Node(name string, checks ...Chk) string {
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
func (t *T) SetCheck(node, id, status string) {
	t.catalog("register", map[string]any{"Node": node, "Address": "127.0.0.1",
		"Check": checkBody(node, Chk{ID: id, Status: status})})
}

// DeregisterCheck removes one check from node.
func (t *T) DeregisterCheck(node, id string) {
	t.catalog("deregister", map[string]any{"Node": node, "CheckID": id})
}

// DeregisterNode removes a node.
func (t *T) DeregisterNode(node string) {
	t.catalog("deregister", map[string]any{"Node": node})
}

func (t *T) catalog(op string, body map[string]any) {
	r := t.DoJSON(http.MethodPut, "/v1/catalog/"+op, body)
	if r.Code != 200 || r.Text() != "true" {
		t.Fatalf("catalog %s %v: want 200 true, got %s", op, body, r)
	}
}

// NodeChecks reads a node's health checks (ID → check).
func (t *T) NodeChecks(node string) map[string]*api.HealthCheck {
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

// ---- txn ----

// TxnKV is one KV op of PUT /v1/txn.
type TxnKV struct {
	Verb    string
	Key     string
	Value   []byte `json:",omitempty"`
	Flags   uint64 `json:",omitempty"`
	Index   uint64 `json:",omitempty"`
	Session string `json:",omitempty"`
}

// TxnError is one entry of a failed txn's Errors.
type TxnError struct {
	OpIndex int
	What    string
}

// TxnAnswer is the decoded body of a txn answer (200 or 409).
type TxnAnswer struct {
	Results []struct{ KV *api.KVPair }
	Errors  []TxnError
}

// Txn sends KV ops; it decodes the body of a 200 or 409 answer.
func (t *T) Txn(ops ...TxnKV) (*resp, TxnAnswer) {
	wrapped := make([]map[string]TxnKV, len(ops))
	for i, op := range ops {
		wrapped[i] = map[string]TxnKV{"KV": op}
	}
	r := t.DoJSON(http.MethodPut, "/v1/txn", wrapped)
	var a TxnAnswer
	if r.Code == 200 || r.Code == 409 {
		t.decode("txn", r, &a)
	}
	return r, a
}

// ---- small utilities ----

// kvState is the part of a key compared by the "changes nothing" checks.
type kvState struct {
	Value                              string
	Flags, LockIndex, CreateIndex, Mod uint64
	Session                            string
}

func stateOf(p *api.KVPair) *kvState {
	if p == nil {
		return nil
	}
	return &kvState{Value: string(p.Value), Flags: p.Flags, LockIndex: p.LockIndex,
		CreateIndex: p.CreateIndex, Mod: p.ModifyIndex, Session: p.Session}
}

// Unchanged records a failure if key's state differs from before.
func (t *T) Unchanged(what, key string, before *api.KVPair) {
	now, _ := t.Get(key)
	t.Equal(what+": state of "+key, stateOf(now), stateOf(before))
}

// Home returns the case's own node, registered on first use with no checks.
func (t *T) Home() string {
	t.mu.Lock()
	home := t.home
	t.mu.Unlock()
	if home == "" {
		home = t.Node("home")
		t.mu.Lock()
		t.home = home
		t.mu.Unlock()
	}
	return home
}

// Sess creates a session on the case's own node bound to no checks, so it
// lives until destroyed (or its TTL runs out).
func (t *T) Sess(fields map[string]any) string {
	return t.NodeSession(t.Home(), nil, fields)
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

func u64(n uint64) string { return strconv.FormatUint(n, 10) }
