package conformance

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// dropServiceMeta is a mutant that lets a service's bad meta through on
// one path, as a server without the meta rules would: it strips Meta from
// the service in the request before the server sees it.
func dropServiceMeta(name, path string) mutant {
	return mutant{name: name, prepare: func(x *exchange) {
		if x.r.Method != http.MethodPut || x.r.URL.Path != path {
			return
		}
		rewriteJSON(x, func(v any) any {
			strip := func(m any) {
				if m, ok := m.(map[string]any); ok {
					delete(m, "Meta")
				}
			}
			switch body := v.(type) {
			case map[string]any: // agent or catalog register
				strip(body)
				strip(body["Service"])
			case []any: // txn
				for _, op := range body {
					if op, ok := op.(map[string]any); ok {
						if sv, ok := op["Service"].(map[string]any); ok {
							strip(sv["Service"])
						}
					}
				}
			}
			return v
		})
	}}
}

// TestServiceMetaCaseCatchesLaxServers: S74's meta case fails against a
// server that skips the meta rules on any one of its three paths, and
// against one that checks a txn's meta before running its ops, so that
// an earlier failing op goes unreported (tenure before the check moved
// into the model's service op).
func TestServiceMetaCaseCatchesLaxServers(t *testing.T) {
	t.Parallel()
	requireConsulMutantsCaught(t, `^S74/service-meta-refused-with-consul-reasons$`,
		dropServiceMeta("agent-register-ignores-meta", "/v1/agent/service/register"),
		dropServiceMeta("catalog-register-ignores-meta", "/v1/catalog/register"),
		dropServiceMeta("txn-ignores-meta", "/v1/txn"),
		mutant{name: "txn-reports-only-the-meta-error", handle: func(_ *mstate, x *exchange) (bool, error) {
			if x.r.Method != http.MethodPut || x.r.URL.Path != "/v1/txn" {
				return false, nil
			}
			if err := x.forward(); err != nil || x.code != http.StatusConflict {
				return true, err
			}
			var out struct {
				Results any
				Errors  []struct {
					OpIndex int
					What    string
				}
			}
			if json.Unmarshal(x.out, &out) != nil {
				return true, nil
			}
			kept := out.Errors[:0]
			for _, e := range out.Errors {
				if strings.HasPrefix(e.What, "Invalid Service Meta") {
					kept = append(kept, e)
				}
			}
			if len(kept) > 0 {
				out.Errors = kept
				if b, err := json.Marshal(out); err == nil {
					x.out = b
				}
			}
			return true, nil
		}},
	)
}
