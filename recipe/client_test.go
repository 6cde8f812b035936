package recipe

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/hashicorp/consul/api"
)

// TestRawRequestScope: the raw acquire carries the config's datacenter,
// namespace, partition and token exactly as api's own requests do, and
// nothing of the kind when the config leaves them empty.
func TestRawRequestScope(t *testing.T) {
	for _, tc := range []struct {
		name                string
		dc, ns, part, token string
		wantQuery           string
		wantToken           []string
	}{
		{"empty", "", "", "", "", "acquire=s1", nil},
		{"scoped", "dc2", "team", "p1", "secret", "acquire=s1&dc=dc2&ns=team&partition=p1", []string{"secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var query url.Values
			var token []string
			cfg := api.DefaultConfig()
			cfg.Address, cfg.Datacenter, cfg.Namespace, cfg.Partition, cfg.Token = "fake:8500", tc.dc, tc.ns, tc.part, tc.token
			cfg.HttpClient = &http.Client{Transport: handlerTransport{func(w http.ResponseWriter, r *http.Request) {
				query, token = r.URL.Query(), r.Header.Values("X-Consul-Token")
				w.Write([]byte("true"))
			}}}
			c, err := NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ans, err := c.tryAcquire(context.Background(), "k", "s1", nil, 0)
			if err != nil || !ans.ok {
				t.Fatalf("tryAcquire = %+v, %v", ans, err)
			}
			if got := query.Encode(); got != tc.wantQuery {
				t.Errorf("query %s, want %s", got, tc.wantQuery)
			}
			if fmt.Sprint(token) != fmt.Sprint(tc.wantToken) {
				t.Errorf("token header %q, want %q", token, tc.wantToken)
			}
		})
	}
}
