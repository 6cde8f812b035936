package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/sim"
)

// aclProbe writes three keys as a process sees them: with no token, with
// a token of its own that may write only under ok/, and with the
// management token its API carries. It records each write's outcome.
func aclProbe(ctx context.Context, p *sim.Process) {
	outcome := func(err error) string {
		switch {
		case err == nil:
			return "written"
		case strings.Contains(err.Error(), "403"):
			return "refused"
		default:
			return "error: " + err.Error()
		}
	}
	put := func(c *api.Client, key string) error {
		_, err := c.KV().Put(&api.KVPair{Key: key, Value: []byte("v")}, nil)
		return err
	}
	anon, err := p.Client("")
	if err != nil {
		p.Record("setup", err.Error())
		return
	}
	p.Record("anonymous ok/a", outcome(put(anon.API, "ok/a")))
	narrow := ""
	if p.ManagementToken() != "" {
		acl := p.API().ACL()
		pol, _, err := acl.PolicyCreate(&api.ACLPolicy{Name: "ok-writer", Rules: `key_prefix "ok/" { policy = "write" }`}, nil)
		if err != nil {
			p.Record("setup", err.Error())
			return
		}
		tok, _, err := acl.TokenCreate(&api.ACLToken{Policies: []*api.ACLTokenPolicyLink{{ID: pol.ID}}}, nil)
		if err != nil {
			p.Record("setup", err.Error())
			return
		}
		narrow = tok.SecretID
	}
	own, err := p.Client(narrow)
	if err != nil {
		p.Record("setup", err.Error())
		return
	}
	p.Record("own ok/b", outcome(put(own.API, "ok/b")))
	p.Record("own no/c", outcome(put(own.API, "no/c")))
	p.Record("management no/d", outcome(put(p.API(), "no/d")))
	_ = p.Sleep(ctx, time.Hour)
}

// TestACLOptionGivesProcessesTheManagementToken: with Options.ACL the
// servers refuse the anonymous token, a process's API and Recipe carry
// the management token, and a token a process makes for itself is held to
// its rules; without it every write goes through (so the outcomes below
// are the option's doing). A failed run's scenario keeps the option.
func TestACLOptionGivesProcessesTheManagementToken(t *testing.T) {
	want := map[bool]map[string]string{
		true:  {"anonymous ok/a": "refused", "own ok/b": "written", "own no/c": "refused", "management no/d": "written"},
		false: {"anonymous ok/a": "written", "own ok/b": "written", "own no/c": "written", "management no/d": "written"},
	}
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("acl=%v", on), func(t *testing.T) {
			res, err := sim.Simulate(t, sim.Options{Seed: 5, Duration: 20 * time.Second, Faults: sim.NoFaults, ACL: on},
				func(c *sim.Cluster) { c.Go(aclProbe) })
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Violations) > 0 {
				t.Fatalf("violations: %+v", res.Violations)
			}
			if strings.Contains(res.Report(t), "ACLs on") != on {
				t.Errorf("the report's first line does not say whether ACLs were on: %s", strings.SplitN(res.Report(t), "\n", 2)[0])
			}
			got := map[string]string{}
			for _, r := range res.History.Records {
				if v, ok := r.Value.(string); ok {
					got[r.Kind] = v
				}
			}
			for kind, w := range want[on] {
				if got[kind] != w {
					t.Errorf("%s: %q, want %q (all: %v)", kind, got[kind], w, got)
				}
			}
		})
	}
	path := filepath.Join(t.TempDir(), "scenario.json")
	b, err := json.Marshal(sim.Scenario{Seed: 5, Servers: 3, Duration: 20 * time.Second, Schedule: []sim.Fault{}, ACL: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := sim.ReadScenario(path)
	if err != nil || !sc.Apply(sim.Options{}).ACL {
		t.Fatalf("a scenario with ACLs replays without them: %+v %v", sc, err)
	}
}

// narrowLocker takes consul/api's lock under a token with only what the
// lock needs, which it creates through its API (carrying the run's
// management token), and records while it holds.
func narrowLocker(ctx context.Context, p *sim.Process) {
	pol, _, err := p.API().ACL().PolicyCreate(&api.ACLPolicy{Name: "locker-" + p.Name(),
		Rules: `key "service/demo/leader" { policy = "write" } session_prefix "" { policy = "write" }`}, nil)
	if err != nil {
		p.Record("setup", err.Error())
		return
	}
	tok, _, err := p.API().ACL().TokenCreate(&api.ACLToken{Policies: []*api.ACLTokenPolicyLink{{ID: pol.ID}}}, nil)
	if err != nil {
		p.Record("setup", err.Error())
		return
	}
	rc, err := p.Client(tok.SecretID)
	if err != nil {
		p.Record("setup", err.Error())
		return
	}
	lock, err := rc.API.LockKey("service/demo/leader")
	if err != nil {
		p.Record("setup", err.Error())
		return
	}
	lost, err := lock.Lock(ctx.Done())
	if err != nil || lost == nil {
		p.Record("setup", fmt.Sprint("lock: ", err))
		return
	}
	p.Begin("leader")
	select {
	case <-lost:
	case <-ctx.Done():
	}
	p.End("leader")
	_ = lock.Unlock()
}

// With Options.ACL a process runs its lock code under the token it will
// have in production (narrowLocker).
func ExampleProcess_Client() {
	var t *testing.T // the test's own
	sim.Check(t, sim.Options{Seed: 1, ACL: true}, func(c *sim.Cluster) { c.Go(narrowLocker) })
}

// TestLockUnderANarrowToken runs the example without faults: the process
// holds the lock with the token it made.
func TestLockUnderANarrowToken(t *testing.T) {
	res, err := sim.Simulate(t, sim.Options{Seed: 2, Duration: 20 * time.Second, Faults: sim.NoFaults, ACL: true},
		func(c *sim.Cluster) { c.Go(narrowLocker) })
	if err != nil {
		t.Fatal(err)
	}
	if setup := res.History.Of("setup"); len(setup) > 0 || len(res.History.Spans("leader")) != 1 || len(res.Violations) > 0 {
		t.Fatalf("setup %v, leader spans %v, violations %v", setup, res.History.Spans("leader"), res.Violations)
	}
}
