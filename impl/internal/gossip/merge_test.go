package gossip

import (
	"strings"
	"testing"

	"github.com/hashicorp/serf/serf"
)

// TestMergeRefusesSharedNodeIDs: a join that brings this agent's node ID
// under another name, or one ID under two names, is refused with Consul's
// words; left members, members without an ID and a member that is this
// agent are not.
func TestMergeRefusesSharedNodeIDs(t *testing.T) {
	d := idMerge{name: "a", id: "id-a"}
	member := func(name, id string, st serf.MemberStatus) *serf.Member {
		return &serf.Member{Name: name, Tags: map[string]string{TagID: id}, Status: st}
	}
	for _, tc := range []struct {
		name    string
		members []*serf.Member
		want    string
	}{
		{"distinct IDs", []*serf.Member{member("a", "id-a", serf.StatusAlive), member("b", "id-b", serf.StatusAlive), member("c", "", serf.StatusAlive)}, ""},
		{"this agent's ID elsewhere", []*serf.Member{member("b", "id-a", serf.StatusAlive)},
			"Member 'b' has conflicting node ID 'id-a' with this agent's ID"},
		{"one ID under two names", []*serf.Member{member("b", "id-x", serf.StatusAlive), member("c", "id-x", serf.StatusFailed)},
			"Member 'c' has conflicting node ID 'id-x' with member 'b'"},
		{"a left member is exempt", []*serf.Member{member("b", "id-a", serf.StatusLeft), member("c", "id-x", serf.StatusAlive), member("d", "id-x", serf.StatusLeft)}, ""},
	} {
		err := d.NotifyMerge(tc.members)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestJoinWithAnotherAgentsNodeIDRefused: on real pools, an agent that
// carries a member's node ID under its own name cannot join; one with an ID
// of its own can.
func TestJoinWithAnotherAgentsNodeIDRefused(t *testing.T) {
	start := func(name, id string) *Pool {
		p, err := Start(Config{NodeName: name, BindAddr: "127.0.0.1", Timing: DevTiming,
			Tags: map[string]string{TagRole: RoleClient, TagID: id}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Shutdown() })
		return p
	}
	a := start("a", "4f5a3c1e-0000-4000-8000-000000000001")
	copied := start("b", "4f5a3c1e-0000-4000-8000-000000000001")
	if n, err := copied.Join([]string{a.Local().Addr()}); err == nil || n != 0 || !strings.Contains(err.Error(), "conflicting node ID") {
		t.Fatalf("join with a's node ID: %d, %v; want it refused", n, err)
	}
	own := start("c", "4f5a3c1e-0000-4000-8000-000000000003")
	if n, err := own.Join([]string{a.Local().Addr()}); err != nil || n != 1 {
		t.Fatalf("join with an ID of its own: %d, %v", n, err)
	}
}
