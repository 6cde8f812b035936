package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// TestForwardCarriesCallerToken: the token a client presents to its agent
// (Consul's order: ?token, then X-Consul-Token, then a Bearer
// Authorization) travels in the forwarded request's Origin.Token, unchanged
// through a client agent and a follower to the leader, and a request with
// none carries none.
func TestForwardCarriesCallerToken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		query  string
		header map[string]string
		want   string
	}{
		{"none", "", nil, ""},
		{"query beats headers", "?token=q-tok", map[string]string{"X-Consul-Token": "h-tok", "Authorization": "Bearer b-tok"}, "q-tok"},
		{"X-Consul-Token beats Authorization", "", map[string]string{"X-Consul-Token": "h-tok", "Authorization": "Bearer b-tok"}, "h-tok"},
		{"bearer", "", map[string]string{"Authorization": "bearer  b-tok extra"}, "b-tok"},
		{"not bearer", "", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, follower, toLeader := newPair(t)
			toFollower := &countingForwarder{to: rpc.Local{"node-f:8300": follower.srv.Config.Handler}}
			members := &staticMembers{}
			members.set("node-f:8300")
			agent := httpapi.NewClientAgent(httpapi.ClientOptions{Node: "c1", Members: members, Forward: toFollower})
			req := httptest.NewRequest(http.MethodPut, "/v1/kv/k"+tc.query, nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			agent.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				t.Fatalf("put answered %d %s", w.Code, w.Body)
			}
			for hop, f := range map[string]*countingForwarder{"agent to follower": toFollower, "follower to leader": toLeader} {
				if len(f.origins) != 1 || f.origins[0].Token != tc.want {
					t.Fatalf("%s: origins %+v, want one with token %q", hop, f.origins, tc.want)
				}
			}
			if o := toLeader.origins[0]; o.Node != "c1" || !o.Forwarded {
				t.Fatalf("follower to leader: origin %+v, want node c1, forwarded", o)
			}
		})
	}
}
