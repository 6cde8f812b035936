package conformance

import (
	"context"
	"strings"
	"testing"
)

// startDevACL, when a test file links an in-process server in
// (dev_test.go), starts one with ACLs on, default_policy "deny", and
// returns its URL and management token.
var startDevACL func(tb testing.TB) (addr, token string)

// TestConformanceACL runs the ACL cases (profile acl-tenure) against an
// in-process tenure with ACLs on. Against a server of one's own, run
// TestConformance with -profile acl (or acl-consul, acl-tenure) and -token.
func TestConformanceACL(t *testing.T) {
	t.Parallel()
	if *flagAddr != "" {
		t.Skip("with -addr, the ACL profiles run in TestConformance: -profile acl -token <management token>")
	}
	if startDevACL == nil {
		t.Skip("no in-process server linked in")
	}
	addr, token := startDevACL(t)
	rep := Run(context.Background(), Options{Addr: addr, Token: token, Profile: ACLTenure, Parallel: *flagParallel})
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	if rep.Error != "" {
		t.Errorf("run error: %s", rep.Error)
	}
	ran := 0
	for _, c := range rep.Cases {
		switch c.Outcome {
		case Fail:
			t.Errorf("%s: %s", c.ID, c.Reason)
		case Pass:
			ran++
		}
	}
	if ran == 0 {
		t.Error("no ACL case ran")
	}
}

// escalate is a mutant that decides the requests whose path starts with
// one of prefixes as if they came with the management token: the server
// then enforces nothing on them, which the S90 cases aimed at it must
// catch.
func escalate(name, filter, mgmt string, prefixes ...string) mutant {
	return mutant{name: name, filter: filter, prepare: func(x *exchange) {
		for _, p := range prefixes {
			if strings.HasPrefix(x.r.URL.Path, p) {
				x.r.Header.Set("X-Consul-Token", mgmt)
				return
			}
		}
	}}
}

// TestACLEnforcementMutantsAreCaught: each S90 and S91 case fails against
// a server that does not enforce what it checks, and passes through an
// identity proxy.
func TestACLEnforcementMutantsAreCaught(t *testing.T) {
	t.Parallel()
	if *flagAddr != "" {
		t.Skip("runs against an in-process server with ACLs on")
	}
	if startDevACL == nil {
		t.Skip("no in-process server linked in")
	}
	addr, token := startDevACL(t)
	const all = `^S9[01]/`
	control := Run(context.Background(), Options{Addr: proxyFor(t, addr, mutant{name: "identity"}), Token: token,
		Profile: ACLTenure, Filter: all})
	if !control.OK() || control.Passed == 0 {
		var b strings.Builder
		_ = control.WriteTable(&b) // writes to a strings.Builder cannot fail
		t.Fatalf("cases fail through the identity proxy:\n%s", b.String())
	}
	for _, m := range []mutant{
		escalate("catalog-writes-unchecked", `^S90/catalog-writes`, token, "/v1/catalog/register", "/v1/catalog/deregister"),
		escalate("catalog-reads-unfiltered", `^S90/catalog-and-health-reads`, token, "/v1/catalog/", "/v1/health/"),
		escalate("agent-and-operator-open", `^S90/agent-and-operator`, token, "/v1/agent/", "/v1/operator/"),
		// A server that validates a registration before it resolves the
		// token answers an unknown token's bad one as it would a known one's.
		escalate("register-token-resolved-late", `^S90/agent-register`, token, "/v1/agent/check/register", "/v1/agent/service/register"),
		escalate("txn-unchecked", `^S90/txn-denied`, token, "/v1/txn"),
		escalate("queries-unchecked", `^S90/prepared-queries`, token, "/v1/query"),
		{name: "txn-service-op-on-its-name-only", filter: `^S91/`, prepare: func(x *exchange) {
			// Consul's decision: the op's own name only, which this
			// token may write, so the server is asked as management.
			if x.r.URL.Path == "/v1/txn" && strings.Contains(string(x.body), `"Service"`) {
				x.r.Header.Set("X-Consul-Token", token)
			}
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			rep := Run(context.Background(), Options{Addr: proxyFor(t, addr, m), Token: token, Profile: ACLTenure, Filter: m.filter})
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
