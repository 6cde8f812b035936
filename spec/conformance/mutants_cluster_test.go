package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Mutants of the cluster-level clauses (S81 on), which are consul clauses
// that tenure meets too: each must fail the case named by its filter, and
// the same cases must pass through an identity proxy, both under the
// consul profile.
var clusterMutants = []mutant{
	// A server that ignores ?dc serves every datacenter as its own.
	{name: "dc-ignored", filter: `^S81/unknown-dc`,
		prepare: func(x *exchange) {
			q := x.r.URL.Query()
			if q.Get("dc") == "" {
				return
			}
			q.Del("dc")
			x.r.URL.RawQuery = q.Encode()
		}},
	// A server that names raft servers by node name, as tenure did.
	{name: "raft-id-is-node-name", filter: `^S82/raft-server-id`,
		handle: func(_ *mstate, x *exchange) (bool, error) {
			if x.r.URL.Path != "/v1/operator/raft/configuration" {
				return false, nil
			}
			err := x.forward()
			if err != nil || x.code != 200 {
				return true, err
			}
			var conf map[string]any
			if json.Unmarshal(x.out, &conf) != nil {
				return true, nil
			}
			servers, _ := conf["Servers"].([]any)
			for _, s := range servers {
				if m, ok := s.(map[string]any); ok {
					m["ID"] = m["Node"]
				}
			}
			x.out, err = json.Marshal(conf)
			return true, err
		}},
}

func TestClusterMutantsAreCaught(t *testing.T) {
	t.Parallel()
	base, _, _ := serverUnderTest(t)
	var filters []string
	for _, m := range clusterMutants {
		filters = append(filters, m.filter)
	}
	control := Run(context.Background(), Options{Addr: proxyFor(t, base, mutant{name: "identity"}),
		Token: *flagToken, Profile: Consul, Filter: strings.Join(filters, "|")})
	if !control.OK() || control.Passed == 0 {
		var b strings.Builder
		_ = control.WriteTable(&b) // writes to a strings.Builder cannot fail
		t.Fatalf("cases fail through the identity proxy:\n%s", b.String())
	}
	for _, m := range clusterMutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			rep := Run(context.Background(), Options{Addr: proxyFor(t, base, m), Token: *flagToken,
				Profile: Consul, Filter: m.filter})
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

// templateMutants break prepared-query templates (S83), a contract clause,
// so they join the main mutant list.
var templateMutants = []mutant{
	// A server without templates: the definition loses its template and
	// is stored as a plain query under the prefix's name.
	{name: "templates-ignored", filter: `^S83/`,
		prepare: func(x *exchange) {
			if x.r.Method == http.MethodPost && x.r.URL.Path == "/v1/query" {
				rewriteJSON(x, func(v any) any {
					if m, ok := v.(map[string]any); ok {
						delete(m, "Template")
					}
					return v
				})
			}
		}},
}

func init() { mutants = append(mutants, templateMutants...) }
