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
