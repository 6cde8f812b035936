package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/httpapitest"
	"github.com/tenurekv/tenure/impl/internal/rpc"
	"github.com/tenurekv/tenure/model"
)

// countingForwarder records what a follower forwards and hands it to the
// handler registered for the address (rpc.Local: the frames are encoded and
// decoded as on the wire).
type countingForwarder struct {
	mu      sync.Mutex
	to      rpc.Local
	paths   []string
	origins []rpc.Origin
}

func (c *countingForwarder) Forward(ctx context.Context, addr string, req *rpc.Request) (*rpc.Response, error) {
	c.mu.Lock()
	c.paths = append(c.paths, req.Method+" "+req.URI)
	c.origins = append(c.origins, req.Origin)
	to := c.to
	c.mu.Unlock()
	return to.Forward(ctx, addr, req)
}

func (c *countingForwarder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.paths)
}

// leaderAddr is the leader's server port in these tests.
const leaderAddr = "node-a:8300"

// newPair starts a leader and a follower of one fake cluster; the follower
// forwards through the returned forwarder to the leader's API.
func newPair(t *testing.T) (leader, follower *fixture, fwd *countingForwarder) {
	leader = newFixture(t)
	fb := leader.b.Follower("node-f")
	fb.SetLeader(false, leaderAddr, true)
	fb.SetLastContact(1500 * 1e6) // 1.5s
	fwd = &countingForwarder{to: rpc.Local{leaderAddr: httpapi.New(leader.b, httpapi.Options{})}}
	follower = newFixture(t, withBackend(fb), withOptions(httpapi.Options{Forward: fwd}))
	return leader, follower, fwd
}

func TestForwardToLeader(t *testing.T) {
	_, f, fwd := newPair(t)
	step := func(what string, forwarded bool, do func()) {
		t.Helper()
		n := fwd.count()
		do()
		if got := fwd.count() - n; (got == 1) != forwarded || got > 1 {
			t.Fatalf("%s: forwarded %d times, want forwarded=%v", what, got, forwarded)
		}
	}
	var sid string
	step("session create", true, func() { sid = f.session(nil) })
	// The default node is the node of the server the client asked (S2).
	if se, _, _ := f.client.Session().Info(sid, &api.QueryOptions{AllowStale: true}); se == nil || se.Node != "node-f" {
		t.Fatalf("session created through the follower: %+v", se)
	}
	step("kv put", true, func() { f.put("k", "v") })
	step("acquire", true, func() { f.acquire("lock", sid, "") })
	step("default read", true, func() {
		if p := f.get("k"); p == nil || string(p.Value) != "v" {
			t.Fatalf("forwarded get: %+v", p)
		}
	})
	step("consistent read", true, func() {
		want(t, "consistent", f.do(http.MethodGet, "/v1/kv/k?consistent", nil), http.StatusOK, "")
	})
	step("stale read", false, func() {
		r := f.do(http.MethodGet, "/v1/kv/k?stale", nil)
		want(t, "stale", r, http.StatusOK, "")
		if r.header.Get("X-Consul-LastContact") != "1500" || r.header.Get("X-Consul-KnownLeader") != "true" {
			t.Fatalf("stale read headers %v", r.header)
		}
	})
	step("stale read within max_stale", false, func() {
		want(t, "max_stale 2s", f.do(http.MethodGet, "/v1/kv/k?max_stale=2s", nil), http.StatusOK, "")
	})
	step("stale read beyond max_stale", true, func() {
		want(t, "max_stale 1s", f.do(http.MethodGet, "/v1/kv/k?max_stale=1s", nil), http.StatusOK, "")
	})
	// Renew goes to the leader even under ?stale, whose timer counts (S18).
	step("stale renew", true, func() {
		want(t, "renew", f.do(http.MethodPut, "/v1/session/renew/"+sid+"?stale", nil), http.StatusOK, "")
	})
	step("read-only txn", true, func() {
		want(t, "txn get", f.do(http.MethodPut, "/v1/txn", txnBody(t, txnKV{"Verb": "get", "Key": "k"})), http.StatusOK, "")
	})
	step("stale read-only txn", false, func() {
		want(t, "stale txn get", f.do(http.MethodPut, "/v1/txn?stale", txnBody(t, txnKV{"Verb": "get", "Key": "k"})), http.StatusOK, "")
	})
	step("write txn", true, func() {
		want(t, "txn set", f.do(http.MethodPut, "/v1/txn", txnBody(t, txnKV{"Verb": "set", "Key": "t", "Value": []byte("1")})), http.StatusOK, "")
	})
	step("agent self", false, func() {
		if name, err := f.client.Agent().NodeName(); err != nil || name != "node-f" {
			t.Fatalf("follower's agent self: %q %v", name, err)
		}
	})
	step("status", false, func() {
		want(t, "status", f.do(http.MethodGet, "/v1/status/leader", nil), http.StatusOK, `"127.0.0.1:8300"`)
	})
	// An agent check update acts on the follower's own node, on the leader (S48):
	// failing node-f's serfHealth invalidates the session bound to it (S12).
	step("agent fail", true, func() {
		want(t, "fail serfHealth", f.do(http.MethodPut, "/v1/agent/check/fail/serfHealth", nil), http.StatusOK, "")
	})
	snap := f.b.Store().Snapshot()
	fc, _ := snap.Check(model.CheckKey{Node: "node-f", CheckID: "serfHealth"})
	ac, _ := snap.Check(model.CheckKey{Node: "node-a", CheckID: "serfHealth"})
	if fc.Status != model.HealthCritical || ac.Status != model.HealthPassing {
		t.Fatalf("agent fail through node-f changed the wrong check: %+v", snap.CheckList("", ""))
	}
	if _, alive := snap.Session(sid); alive {
		t.Fatal("failing the bound check left the session alive")
	}
	if p := f.get("lock"); p.Session != "" {
		t.Fatalf("invalidated session still holds the lock: %+v", p)
	}
	for i, o := range fwd.origins {
		if o != (rpc.Origin{Node: "node-f", Forwarded: true}) {
			t.Fatalf("forward %d (%s) carried origin %+v", i, fwd.paths[i], o)
		}
	}
}

func TestForwardNoLeader(t *testing.T) {
	_, f, fwd := newPair(t)
	f.b.SetLeader(false, "", false)
	for _, r := range []reply{
		f.do(http.MethodPut, "/v1/kv/k", []byte("v")),
		f.do(http.MethodGet, "/v1/kv/k", nil),
		f.do(http.MethodPut, "/v1/session/create", nil),
		f.do(http.MethodPut, "/v1/session/renew/x?stale", nil),
	} {
		want(t, "without a leader", r, http.StatusInternalServerError, "No cluster leader")
	}
	r := f.do(http.MethodGet, "/v1/kv/k?stale", nil)
	want(t, "stale read without a leader", r, http.StatusNotFound, "")
	if r.header.Get("X-Consul-KnownLeader") != "false" {
		t.Fatalf("KnownLeader %q", r.header.Get("X-Consul-KnownLeader"))
	}
	if fwd.count() != 0 {
		t.Fatalf("forwarded %v with no leader known", fwd.paths)
	}
}

// Two followers that each believe the other leads: the hop header stops the
// request after one forward (no loop), answering Consul's no-leader 500.
func TestForwardLoopStops(t *testing.T) {
	leader := newFixture(t)
	fb1, fb2 := leader.b.Follower("f1"), leader.b.Follower("f2")
	t1, t2 := &countingForwarder{}, &countingForwarder{}
	h1 := httpapi.New(fb1, httpapi.Options{Forward: t1})
	h2 := httpapi.New(fb2, httpapi.Options{Forward: t2})
	t1.to, t2.to = rpc.Local{"f2:8300": h2}, rpc.Local{"f1:8300": h1}
	f1 := newFixture(t, withBackend(fb1), withOptions(httpapi.Options{Forward: t1}))
	fb1.SetLeader(false, "f2:8300", true)
	fb2.SetLeader(false, "f1:8300", true)
	want(t, "looping put", f1.do(http.MethodPut, "/v1/kv/k", []byte("v")), http.StatusInternalServerError, "No cluster leader")
	if t1.count() != 1 || t2.count() != 0 {
		t.Fatalf("forwards: f1 %v, f2 %v; want one hop", t1.paths, t2.paths)
	}
}

// TestForgedOriginHeaders: the headers that once named a request's origin
// are ordinary headers now. A session created through a follower with
// either of them still belongs to the follower's node (S2), the request is
// still forwarded, and the headers do not travel to the leader.
func TestForgedOriginHeaders(t *testing.T) {
	for _, h := range []string{"X-Tenure-Forwarded-By", "X-Tenure-Agent"} {
		leader, f, fwd := newPair(t)
		req, err := http.NewRequest(http.MethodPut, f.srv.URL+"/v1/session/create", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(h, "other-node")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ ID string }
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: create answered %d (%v)", h, resp.StatusCode, err)
		}
		if fwd.count() != 1 {
			t.Fatalf("%s: forwarded %d times, want once", h, fwd.count())
		}
		se, ok := leader.b.Store().Snapshot().Session(out.ID)
		if !ok || se.Node != "node-f" {
			t.Fatalf("%s: other-node: session %+v (found %v), want node node-f", h, se, ok)
		}
		// On the leader itself the header names nobody either.
		req, _ = http.NewRequest(http.MethodPut, leader.srv.URL+"/v1/session/create", nil)
		req.Header.Set(h, "node-f")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if se, _ := leader.b.Store().Snapshot().Session(out.ID); err != nil || se.Node != "node-a" {
			t.Fatalf("%s on the leader: session %+v (%v), want node node-a", h, se, err)
		}
	}
}

// deposed claims to lead, but its Apply finds it no longer does: the race
// between the leadership check and the proposal.
type deposed struct{ *httpapitest.Backend }

func (d deposed) Leader() (bool, string, bool) { return true, "", true }

func TestLeadershipLostMidRequest(t *testing.T) {
	leader := newFixture(t)
	srv := httpapi.New(deposed{leader.b.Follower("node-f")}, httpapi.Options{})
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/v1/kv/k", strings.NewReader("v")))
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != "No cluster leader" {
		t.Fatalf("deposed leader answered %d %q", rec.Code, rec.Body.String())
	}
}

func TestForwardToUnreachableLeader(t *testing.T) {
	_, f, fwd := newPair(t)
	fwd.to = rpc.Local{} // nothing answers at the leader's address
	r := f.do(http.MethodPut, "/v1/kv/k", []byte("v"))
	want(t, "unreachable leader", r, http.StatusInternalServerError, "")
	if !strings.HasPrefix(r.text(), "forward to leader "+leaderAddr+": ") {
		t.Fatalf("unreachable leader text %q", r.text())
	}
}
