package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mutants: a loopback proxy in front of a real server (-addr) that breaks
// one clause on the wire. Each mutant must make at least one of the cases
// aimed at it FAIL, which shows those cases can fail. Needs a server (-addr
// or startDev); skipped otherwise, like TestConformance.

type upstream struct {
	base   string
	client *http.Client
}

// fwd sends a request upstream and returns status, headers and body.
func (u *upstream) fwd(ctx context.Context, method, pathQuery string, h http.Header, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.base+pathQuery, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	for _, k := range []string{"X-Consul-Token", "Content-Type", "Cache-Control", "X-Forwarded-For"} {
		if v := h.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := u.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b, err
}

// exchange is one proxied request, open to rewriting in both directions.
type exchange struct {
	u      *upstream
	r      *http.Request
	body   []byte
	q      url.Values
	code   int
	header http.Header
	out    []byte
}

func (x *exchange) forward() error {
	pq := x.r.URL.Path
	if x.r.URL.RawQuery != "" {
		pq += "?" + x.r.URL.RawQuery
	}
	var err error
	x.code, x.header, x.out, err = x.u.fwd(x.r.Context(), x.r.Method, pq, x.r.Header, x.body)
	return err
}

// mutant rewrites exchanges; it returns false to let the proxy forward
// unchanged.
type mutant struct {
	name    string
	filter  string // regexp of the cases that must catch it
	slow    bool
	agents  bool // its cases start agents (Options.Agent)
	handle  func(m *mstate, x *exchange) (handled bool, err error)
	prepare func(x *exchange) // optional request rewrite before forwarding
}

// mstate is per-mutant memory (e.g. recent releases).
type mstate struct {
	mu       sync.Mutex
	released map[string]time.Time
	freed    map[string]bool        // key released since its last acquire
	lag      map[string]uint64      // LockIndex bumps hidden from clients
	seen     map[string]uint64      // last LockIndex upstream answered, by key
	timers   map[string]*time.Timer // pending early destroys, by session ID
	kept     map[string][]byte      // info at creation of the sessions keepSessions keeps
	stopped  bool
}

// stop cancels pending timers so nothing reaches upstream after the test.
func (m *mstate) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = true
	for _, tm := range m.timers {
		tm.Stop()
	}
}

func proxyFor(t *testing.T, base string, m mutant) string {
	u := &upstream{base: strings.TrimSuffix(base, "/"), client: &http.Client{}}
	st := &mstate{released: map[string]time.Time{}, freed: map[string]bool{},
		lag: map[string]uint64{}, seen: map[string]uint64{}, timers: map[string]*time.Timer{}, kept: map[string][]byte{}}
	t.Cleanup(st.stop)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if r.ContentLength <= 0 && len(body) == 0 {
			body = nil
		}
		x := &exchange{u: u, r: r, body: body, q: r.URL.Query()}
		handled := false
		if m.prepare != nil {
			m.prepare(x)
		}
		if m.handle != nil {
			handled, err = m.handle(st, x)
		}
		if !handled && err == nil {
			err = x.forward()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, vs := range x.header {
			if k == "Content-Length" {
				continue
			}
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(x.code)
		_, _ = w.Write(x.out) // a client that hung up is not the proxy's problem
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// splitCatalogTxn runs a txn holding a node, service or check op one op at
// a time, so a failing op no longer undoes the ops before it (S68), and
// answers as one txn would: 409 with every failure, else 200 with every
// result.
func splitCatalogTxn(_ *mstate, x *exchange) (bool, error) {
	if x.r.Method != http.MethodPut || x.r.URL.Path != "/v1/txn" {
		return false, nil
	}
	var ops []map[string]json.RawMessage
	if json.Unmarshal(x.body, &ops) != nil || !slices.ContainsFunc(ops, func(op map[string]json.RawMessage) bool {
		return op["Node"] != nil || op["Service"] != nil || op["Check"] != nil
	}) {
		return false, nil
	}
	var results, errs []json.RawMessage
	for i, op := range ops {
		one, err := json.Marshal([]map[string]json.RawMessage{op})
		if err != nil {
			return true, err
		}
		code, _, b, err := x.u.fwd(x.r.Context(), http.MethodPut, "/v1/txn", x.r.Header, one)
		if err != nil {
			return true, err
		}
		var a struct{ Results, Errors []json.RawMessage }
		if json.Unmarshal(b, &a) != nil {
			return true, fmt.Errorf("op %d answered %d %s", i, code, b)
		}
		results = append(results, a.Results...)
		for _, e := range a.Errors {
			var te map[string]any
			if json.Unmarshal(e, &te) == nil {
				te["OpIndex"] = i
				e, _ = json.Marshal(te)
			}
			errs = append(errs, e)
		}
	}
	x.header = http.Header{"Content-Type": {"application/json"}}
	if len(errs) > 0 {
		x.code = 409
		x.out, _ = json.Marshal(map[string]any{"Results": nil, "Errors": errs})
		return true, nil
	}
	x.code = 200
	x.out, _ = json.Marshal(map[string]any{"Results": results, "Errors": nil})
	return true, nil
}

func isKVPut(x *exchange) bool {
	return x.r.Method == http.MethodPut && strings.HasPrefix(x.r.URL.Path, "/v1/kv/")
}

func kvKey(x *exchange) string { return strings.TrimPrefix(x.r.URL.Path, "/v1/kv/") }

// rewriteJSON decodes the request body, lets f change it, and re-encodes it.
func rewriteJSON(x *exchange, f func(v any) any) {
	var v any
	if len(x.body) == 0 || json.Unmarshal(x.body, &v) != nil {
		return
	}
	b, err := json.Marshal(f(v))
	if err == nil {
		x.body = b
	}
}

func answeredTrue(x *exchange) bool {
	return x.code == 200 && strings.TrimSpace(string(x.out)) == "true"
}

// rewriteKVEntries applies f to every KV entry of a KV GET answer (a JSON
// array of entries) or a txn answer (entries under Results[].KV). Numbers
// stay json.Number so indexes survive the round trip exactly.
func rewriteKVEntries(x *exchange, f func(e map[string]any)) {
	dec := json.NewDecoder(bytes.NewReader(x.out))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return
	}
	var entries []any
	switch top := v.(type) {
	case []any:
		entries = top
	case map[string]any:
		rs, _ := top["Results"].([]any)
		for _, r := range rs {
			if rm, ok := r.(map[string]any); ok && rm["KV"] != nil {
				entries = append(entries, rm["KV"])
			}
		}
	}
	for _, e := range entries {
		if em, ok := e.(map[string]any); ok {
			f(em)
		}
	}
	if b, err := json.Marshal(v); err == nil {
		x.out = b
	}
}

// restartLockIndexAfterDelete is a server that reaps a deleted key's
// watermark without a floor (or Consul, S34): after a delete, the key's
// LockIndex restarts from 1, so a re-created key reissues old sequencers.
func restartLockIndexAfterDelete(m *mstate, x *exchange) (bool, error) {
	if err := x.forward(); err != nil {
		return true, err
	}
	k := kvKey(x)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case isKVDelete(x) && answeredTrue(x):
		m.lag[k] = m.seen[k]
	case answersKVEntries(x):
		m.hideLag(x)
	}
	return true, nil
}

func isKVDelete(x *exchange) bool {
	return x.r.Method == http.MethodDelete && strings.HasPrefix(x.r.URL.Path, "/v1/kv/")
}

// answersKVEntries reports whether x's answer lists KV entries: a KV read or a txn.
func answersKVEntries(x *exchange) bool {
	return x.code == 200 && (x.r.Method == http.MethodGet && strings.HasPrefix(x.r.URL.Path, "/v1/kv/") ||
		x.r.URL.Path == "/v1/txn")
}

// hideLag records each entry's true LockIndex in m.seen and passes it on
// lowered by m.lag for its key. m.mu must be held.
func (m *mstate) hideLag(x *exchange) {
	rewriteKVEntries(x, func(e map[string]any) {
		key, _ := e["Key"].(string)
		num, _ := e["LockIndex"].(json.Number)
		li, err := strconv.ParseUint(num.String(), 10, 64)
		if err != nil {
			return
		}
		m.seen[key] = li
		if lag := m.lag[key]; li > lag {
			e["LockIndex"] = li - lag
		}
	})
}

// hideLockIndexBumps is the state behind lockindex-not-bumped-after-release:
// it counts acquires of keys the proxy saw released and subtracts that count
// from every LockIndex it passes on, as if those acquires never bumped it.
func hideLockIndexBumps(m *mstate, x *exchange) (bool, error) {
	if err := x.forward(); err != nil {
		return true, err
	}
	k := kvKey(x)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case isKVPut(x) && x.q.Has("release") && answeredTrue(x):
		m.freed[k] = true
	case isKVPut(x) && x.q.Has("acquire") && answeredTrue(x) && m.freed[k]:
		m.freed[k] = false
		m.lag[k]++
	case isKVDelete(x) && answeredTrue(x):
		// A re-created key starts a new LockIndex history.
		delete(m.freed, k)
		delete(m.lag, k)
	case answersKVEntries(x):
		m.hideLag(x)
	}
	return true, nil
}

// destroyTTLSessionsEarly is the state behind ttl-expiry-before-ttl: it
// destroys every TTL session upstream at half its TTL after create or renew.
func destroyTTLSessionsEarly(m *mstate, x *exchange) (bool, error) {
	var ttl time.Duration
	if x.r.URL.Path == "/v1/session/create" {
		var req struct{ TTL string }
		if json.Unmarshal(x.body, &req) == nil && req.TTL != "" {
			ttl, _ = time.ParseDuration(req.TTL) // unparsable: the server refuses it anyway
		}
	}
	if err := x.forward(); err != nil || x.code != 200 {
		return true, err
	}
	var sid string
	switch p := x.r.URL.Path; {
	case p == "/v1/session/create":
		var out struct{ ID string }
		if json.Unmarshal(x.out, &out) != nil || ttl <= 0 {
			return true, nil
		}
		sid = out.ID
	case strings.HasPrefix(p, "/v1/session/renew/"):
		var out []struct{ ID, TTL string }
		if json.Unmarshal(x.out, &out) != nil || len(out) != 1 || out[0].TTL == "" {
			return true, nil
		}
		sid = out[0].ID
		ttl, _ = time.ParseDuration(out[0].TTL) // the server's own answer
	default:
		return true, nil
	}
	if ttl <= 0 {
		return true, nil
	}
	h := x.r.Header.Clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.timers[sid]; old != nil {
		old.Stop()
	}
	if m.stopped {
		return true, nil
	}
	m.timers[sid] = time.AfterFunc(ttl/2, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// A failed destroy only lets the mutant survive, which the test reports.
		_, _, _, _ = x.u.fwd(ctx, http.MethodPut, "/v1/session/destroy/"+sid, h, []byte{})
	})
	return true, nil
}

// sessionInfoID is the session ID of a session info read, "" for any
// other request.
func sessionInfoID(x *exchange) string {
	if x.r.Method != http.MethodGet || !strings.HasPrefix(x.r.URL.Path, "/v1/session/info/") {
		return ""
	}
	return strings.TrimPrefix(x.r.URL.Path, "/v1/session/info/")
}

// invalidateNodeOnFailure is a server whose failure handling takes every
// session of a failed member's node, not only those bound to serfHealth
// (S53): a session whose node's serfHealth is critical reads as gone.
func invalidateNodeOnFailure(_ *mstate, x *exchange) (bool, error) {
	if err := x.forward(); err != nil || x.code != 200 || sessionInfoID(x) == "" {
		return true, err
	}
	var out []struct{ Node string }
	if json.Unmarshal(x.out, &out) != nil || len(out) != 1 {
		return true, nil
	}
	code, _, body, err := x.u.fwd(x.r.Context(), http.MethodGet, "/v1/health/node/"+url.PathEscape(out[0].Node), x.r.Header, nil)
	if err != nil || code != 200 {
		return true, err
	}
	var checks []struct{ CheckID, Status string }
	if json.Unmarshal(body, &checks) != nil {
		return true, nil
	}
	for _, c := range checks {
		if c.CheckID == "serfHealth" && c.Status == "critical" {
			x.out = []byte("[]")
		}
	}
	return true, nil
}

// keepUnboundSessions is a server that deregisters a node but keeps its
// sessions bound to no check (S53, S10): such a session, once created,
// reads as alive forever.
func keepUnboundSessions(m *mstate, x *exchange) (bool, error) {
	return keepSessions(m, x, func(info []byte) bool {
		var out []struct{ NodeChecks, Checks []string }
		return json.Unmarshal(info, &out) == nil && len(out) == 1 && len(out[0].NodeChecks) == 0 && len(out[0].Checks) == 0
	})
}

// keepSessions is a server that never invalidates the sessions keep picks
// by their info at creation: each reads as it was created, whatever
// happened since.
func keepSessions(m *mstate, x *exchange, keep func(info []byte) bool) (bool, error) {
	if err := x.forward(); err != nil || x.code != 200 {
		return true, err
	}
	if x.r.URL.Path == "/v1/session/create" {
		var out struct{ ID string }
		if json.Unmarshal(x.out, &out) != nil || out.ID == "" {
			return true, nil
		}
		code, _, body, err := x.u.fwd(x.r.Context(), http.MethodGet, "/v1/session/info/"+out.ID, x.r.Header, nil)
		if err != nil || code != 200 {
			return true, err
		}
		if keep(body) {
			m.mu.Lock()
			m.kept[out.ID] = body
			m.mu.Unlock()
		}
		return true, nil
	}
	if id := sessionInfoID(x); id != "" && strings.TrimSpace(string(x.out)) == "[]" {
		m.mu.Lock()
		if kept := m.kept[id]; kept != nil {
			x.out = kept
		}
		m.mu.Unlock()
	}
	return true, nil
}

var mutants = []mutant{
	{name: "txn-catalog-ops-not-atomic", filter: `^S68/failing-catalog-op-aborts-all`, handle: splitCatalogTxn},
	{name: "failure-invalidates-every-session-of-the-node", filter: `^S53/failed`, slow: true, agents: true,
		handle: invalidateNodeOnFailure},
	{name: "deregistration-keeps-unbound-sessions", filter: `^S53/left`, slow: true, agents: true,
		handle: keepUnboundSessions},
	// S41 would catch it too, but it is a tenure clause and mutants run the
	// contract profile (so that -addr can point at a real Consul).
	{name: "lockindex-not-bumped-after-release", filter: `^S27/`, handle: hideLockIndexBumps},
	{name: "lockindex-restarts-after-reap", filter: `^S52/`, handle: restartLockIndexAfterDelete},
	{name: "ttl-expiry-before-ttl", filter: `^S18/`, slow: true, handle: destroyTTLSessionsEarly},
	{name: "release-by-non-holder-accepted", filter: `^S31/`,
		handle: func(_ *mstate, x *exchange) (bool, error) {
			if !isKVPut(x) || !x.q.Has("release") {
				return false, nil
			}
			err := x.forward()
			if err == nil && strings.TrimSpace(string(x.out)) == "false" {
				x.out = []byte("true")
			}
			return true, err
		}},
	{name: "lockindex-bumped-on-reacquire-by-holder", filter: `^S28/|^S40/valid`,
		handle: func(_ *mstate, x *exchange) (bool, error) {
			if !isKVPut(x) || !x.q.Has("acquire") {
				return false, nil
			}
			// Release first when the acquirer already holds the key, so the
			// acquire below counts as a new holder.
			code, _, b, err := x.u.fwd(x.r.Context(), http.MethodGet, "/v1/kv/"+kvKey(x), x.r.Header, nil)
			var cur []struct{ Session string }
			if err == nil && code == 200 && json.Unmarshal(b, &cur) == nil && len(cur) == 1 && cur[0].Session == x.q.Get("acquire") {
				_, _, _, err = x.u.fwd(x.r.Context(), http.MethodPut, "/v1/kv/"+kvKey(x)+"?release="+x.q.Get("acquire"), x.r.Header, []byte{})
			}
			if err != nil {
				return true, err
			}
			return false, nil
		}},
	{name: "lock-delay-armed-on-explicit-release", filter: `^S23/release`,
		handle: func(m *mstate, x *exchange) (bool, error) {
			if !isKVPut(x) {
				return false, nil
			}
			k := kvKey(x)
			m.mu.Lock()
			at, recent := m.released[k]
			m.mu.Unlock()
			if x.q.Has("acquire") && recent && time.Since(at) < 2*time.Second {
				x.code, x.header, x.out = 200, http.Header{}, []byte("false")
				return true, nil
			}
			err := x.forward()
			if err == nil && x.q.Has("release") && strings.TrimSpace(string(x.out)) == "true" {
				m.mu.Lock()
				m.released[k] = time.Now()
				m.mu.Unlock()
			}
			return true, err
		}},
	{name: "delete-behavior-treated-as-release", filter: `^S17/|^S15/destroy`,
		prepare: func(x *exchange) {
			if x.r.URL.Path == "/v1/session/create" {
				rewriteJSON(x, func(v any) any {
					if m, ok := v.(map[string]any); ok && m["Behavior"] == "delete" {
						m["Behavior"] = "release"
					}
					return v
				})
			}
		}},
	{name: "check-warning-invalidates-sessions", filter: `^S12/|^S48/`,
		prepare: func(x *exchange) {
			if x.r.URL.Path == "/v1/catalog/register" {
				x.body = bytes.ReplaceAll(x.body, []byte(`"Status":"warning"`), []byte(`"Status":"critical"`))
			}
		}},
	{name: "session-create-with-critical-check-accepted", filter: `^S6/critical`,
		prepare: func(x *exchange) {
			if x.r.URL.Path != "/v1/session/create" {
				return
			}
			rewriteJSON(x, func(v any) any {
				m, ok := v.(map[string]any)
				if !ok {
					return v
				}
				node, _ := m["Node"].(string)
				checks, _ := m["NodeChecks"].([]any)
				_, _, b, err := x.u.fwd(x.r.Context(), http.MethodGet, "/v1/health/node/"+node, x.r.Header, nil)
				if err != nil {
					return v
				}
				var hc []struct{ CheckID, Status string }
				_ = json.Unmarshal(b, &hc) // undecodable: treat as no checks
				crit := map[string]bool{}
				for _, c := range hc {
					crit[c.CheckID] = c.Status == "critical"
				}
				var keep []any
				for _, c := range checks {
					if s, _ := c.(string); !crit[s] {
						keep = append(keep, c)
					}
				}
				if keep == nil {
					keep = []any{}
				}
				m["NodeChecks"] = keep
				return m
			})
		}},
	{name: "blocking-query-not-woken-by-release", filter: `^S46/release`,
		handle: func(_ *mstate, x *exchange) (bool, error) {
			if x.r.Method != http.MethodGet || !x.q.Has("index") {
				return false, nil
			}
			// Sit out the whole wait, then answer whatever is current.
			d, _ := time.ParseDuration(x.q.Get("wait"))
			select {
			case <-time.After(d):
			case <-x.r.Context().Done():
			}
			x.q.Del("index")
			x.r.URL.RawQuery = x.q.Encode()
			return true, x.forward()
		}},
	{name: "txn-check-session-passes-for-stale-session", filter: `^S42/|^S50/`,
		prepare: func(x *exchange) {
			if x.r.URL.Path != "/v1/txn" {
				return
			}
			rewriteJSON(x, func(v any) any {
				ops, _ := v.([]any)
				var keep []any
				for _, op := range ops {
					if m, ok := op.(map[string]any); ok {
						if kv, ok := m["KV"].(map[string]any); ok && kv["Verb"] == "check-session" {
							kv["Verb"] = "get-or-empty"
						}
					}
					keep = append(keep, op)
				}
				return keep
			})
		}},
	{name: "no-lock-delay", filter: `^S22/destroy-release`,
		prepare: func(x *exchange) {
			if x.r.URL.Path == "/v1/session/create" {
				rewriteJSON(x, func(v any) any {
					if m, ok := v.(map[string]any); ok {
						m["LockDelay"] = "0s"
					}
					return v
				})
			}
		}},
	{name: "cas-ignores-index", filter: `^S35/`,
		prepare: func(x *exchange) {
			if isKVPut(x) && x.q.Has("cas") {
				x.q.Del("cas")
				x.r.URL.RawQuery = x.q.Encode()
			}
		}},
	{name: "index-header-dropped", filter: `^S45/`,
		handle: func(_ *mstate, x *exchange) (bool, error) {
			err := x.forward()
			if err == nil {
				x.header.Del("X-Consul-Index")
			}
			return true, err
		}},
	{name: "renew-does-not-reset-ttl", filter: `^S18/`, slow: true,
		prepare: func(x *exchange) {
			if strings.HasPrefix(x.r.URL.Path, "/v1/session/renew/") {
				x.r.Method = http.MethodGet
				x.r.URL.Path = "/v1/session/info/" + strings.TrimPrefix(x.r.URL.Path, "/v1/session/renew/")
			}
		}},
}

func TestMutantsAreCaught(t *testing.T) {
	// The suite and the mutant check each mostly wait on timers (TTL,
	// lock-delay); running them side by side halves the package's wall time.
	t.Parallel()
	// The mutated cases are all contract cases, so any correct server will
	// do as the base: a real Consul via -addr, or tenure via startDev.
	base, _, reapWait := serverUnderTest(t)
	// The identity proxy must not break anything the mutants' cases check.
	var all []string
	needAgent := false
	for _, m := range mutants {
		if !m.slow || !testing.Short() {
			all = append(all, m.filter)
			needAgent = needAgent || m.agents
		}
	}
	agent := ""
	if needAgent {
		if agent = agentUnderTest(t); agent == "" {
			t.Errorf("the agent mutants need an agent binary: give -agent with -addr")
		}
	}
	control := Run(context.Background(), Options{Addr: proxyFor(t, base, mutant{name: "identity"}),
		Token: *flagToken, Profile: Tenure, Filter: strings.Join(all, "|"), ReapWait: reapWait, Agent: agent})
	if !control.OK() || control.Passed == 0 {
		var b strings.Builder
		_ = control.WriteTable(&b) // writes to a strings.Builder cannot fail
		t.Fatalf("cases fail through the identity proxy:\n%s", b.String())
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			if m.slow && testing.Short() {
				t.Skip("slow mutant skipped in -short mode")
			}
			t.Parallel()
			rep := Run(context.Background(), Options{Addr: proxyFor(t, base, m), Token: *flagToken,
				Profile: Tenure, Filter: m.filter, ReapWait: reapWait, Agent: agent})
			if rep.Failed == 0 && rep.Passed == 0 && len(rep.Cases) > 0 {
				// Against a real Consul, S52 needs -reap-wait: a mutant none
				// of whose cases could run says nothing either way.
				t.Skipf("every case of %s was skipped: %s", m.filter, rep.Cases[0].Reason)
			}
			if rep.Failed == 0 {
				t.Errorf("mutant %s survived cases %s (%d passed)", m.name, m.filter, rep.Passed)
			}
			for _, c := range rep.Cases {
				if c.Outcome == Fail {
					t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
				}
			}
		})
	}
}
