package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/core"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

// TestACLRun: a run with ACLs on and default deny passes every check, its
// clients' forbidden attempts are refused with 403 (so acl-enforced has
// refusals besides the applied requests it judges), and no request a
// client's token allows is refused for ACLs.
func TestACLRun(t *testing.T) {
	cfg := calmConfig(1)
	cfg.ACL = true
	res := runSeed(t, cfg)
	ev := checkResult(t, res)
	if len(ev.Violations) > 0 {
		return // checkResult reported them
	}
	if res.Header.ACL == nil || len(res.Header.ACL.Tokens) != len(res.Header.Clients) {
		t.Fatalf("ACL setup in the header: %+v", res.Header.ACL)
	}
	_, n, err := checks.RunCheckCounted(checks.CheckACLEnforced, res.Events)
	if err != nil || n == 0 {
		t.Fatalf("acl-enforced judged %d: %v", n, err)
	}
	ownKey := map[string]string{} // client → its group's lock key
	for _, ci := range res.Header.Clients {
		ownKey[ci.Name] = res.Header.Groups[ci.Group].Key
	}
	calls := map[int]*core.Call{}
	caller := map[int]string{}
	refused, allowedRefused := 0, 0
	for _, e := range res.Events {
		switch {
		case e.Kind == core.KindCall:
			calls[e.Call.Op], caller[e.Call.Op] = e.Call, e.Node
		case e.Kind == core.KindRet && e.Ret.Status == 403:
			refused++
			c := calls[e.Ret.Op]
			forbidden := c != nil && ((c.KV != nil && strings.HasPrefix(c.KV.Key, "acl/forbidden/")) ||
				(c.Create != nil && c.Create.Node == "n1") || (c.Req == core.ReqGet && c.Key != ownKey[caller[e.Ret.Op]]))
			if !forbidden {
				allowedRefused++
				t.Errorf("op %+v refused: %s", c, e.Ret.Err)
			}
		}
	}
	if refused == 0 || allowedRefused > 0 {
		t.Fatalf("%d refusals, %d of them of requests the token allows", refused, allowedRefused)
	}
	t.Logf("acl-enforced judged %d; %d forbidden attempts refused with 403", n, refused)
}

// TestACLRunExercisesAgentChecks: with ACLs on and no default token on any
// agent, a client's agent TTL check reaches the catalog, because the
// agent writes it with the client's own token, the one it was registered
// with (S86); sessions then bind to it, and when a paused client lets it
// lapse, agent-check-expiry has sessions to judge. Before the agent kept
// registration tokens, the check was written as anonymous and refused, so
// no session could bind to it and the check judged nothing.
func TestACLRunExercisesAgentChecks(t *testing.T) {
	cfg := workload.DefaultConfig(1)
	cfg.ACL = true
	cfg.Groups, cfg.ClientsPerGroup, cfg.Duration = []workload.LockGroup{agentCheckGroup()}, 2, 40*time.Second
	cfg.Schedule = processPauses(1)
	res := runSeed(t, cfg)
	ev := checkResult(t, res)
	if len(ev.Violations) > 0 {
		return // checkResult reported them
	}
	if _, n, err := checks.RunCheckCounted(checks.CheckAgentExpiry, res.Events); err != nil || n == 0 {
		t.Fatalf("agent-check-expiry judged %d: %v", n, err)
	}
	bound := 0
	for _, e := range res.Events {
		if e.Kind == core.KindCall && e.Call.Create != nil && slices.Contains(e.Call.Create.Checks, core.AgentCheckID) {
			bound++
		}
	}
	if bound == 0 {
		t.Fatal("no client asked for a session bound to its agent check")
	}
}
