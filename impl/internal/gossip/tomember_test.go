package gossip

import (
	"net"
	"testing"

	"github.com/hashicorp/serf/serf"

	"github.com/tenurekv/tenure/impl/internal/reconcile"
)

// TestToMember pins how a serf member reads for the leader's reconcile: the
// catalog address is the gossip address, as Consul's (an "http" tag, which
// tenure once used for it, is ignored); only a
// server has a raft address, an expect count and the bootstrapped flag;
// every serf status, and a reap, map to their reconcile status (anything
// else stays unknown).
func TestToMember(t *testing.T) {
	ip := net.ParseIP("10.0.0.7")
	server := map[string]string{TagRole: RoleServer, "http": "s.http:8500", TagPort: "8300", TagExpect: "3", tagRaft: "1"}
	for _, tc := range []struct {
		name string
		in   serf.Member
		want reconcile.Member
	}{
		{
			name: "client with an old HTTP tag and server tags",
			in:   serf.Member{Name: "c", Addr: ip, Tags: map[string]string{TagRole: RoleClient, "http": "c.http:8500", TagPort: "8300", TagExpect: "3", tagRaft: "1"}, Status: serf.StatusAlive},
			want: reconcile.Member{Name: "c", Address: "10.0.0.7", Status: reconcile.Alive},
		},
		{
			name: "client with an ID and a build",
			in: serf.Member{Name: "c", Addr: ip, Tags: map[string]string{TagRole: RoleClient, TagID: "4f5a3c1e-0000-4000-8000-000000000001",
				TagBuild: "1.22.7:abcdef01"}, Status: serf.StatusAlive},
			want: reconcile.Member{Name: "c", Address: "10.0.0.7", Status: reconcile.Alive, ID: "4f5a3c1e-0000-4000-8000-000000000001", Version: "1.22.7"},
		},
		{
			name: "client",
			in:   serf.Member{Name: "c", Addr: ip, Tags: map[string]string{TagRole: RoleClient}, Status: serf.StatusFailed},
			want: reconcile.Member{Name: "c", Address: "10.0.0.7", Status: reconcile.Failed},
		},
		{
			name: "bootstrapped server",
			in:   serf.Member{Name: "s", Addr: ip, Tags: server, Status: serf.StatusLeaving},
			want: reconcile.Member{Name: "s", Address: "10.0.0.7", Status: reconcile.Leaving, Server: true, RaftAddr: "10.0.0.7:8300", Expect: 3, Bootstrapped: true},
		},
		{
			name: "server without port, expect or raft tags",
			in:   serf.Member{Name: "s", Addr: ip, Tags: map[string]string{TagRole: RoleServer, tagRaft: "0"}, Status: serf.StatusLeft},
			want: reconcile.Member{Name: "s", Address: "10.0.0.7", Status: reconcile.Left, Server: true},
		},
		{
			name: "reaped member",
			in:   serf.Member{Name: "s", Addr: ip, Tags: server, Status: statusReaped},
			want: reconcile.Member{Name: "s", Address: "10.0.0.7", Status: reconcile.Reaped, Server: true, RaftAddr: "10.0.0.7:8300", Expect: 3, Bootstrapped: true},
		},
		{
			name: "status serf does not name",
			in:   serf.Member{Name: "c", Addr: ip, Tags: map[string]string{"http": "c.http:8500"}, Status: serf.StatusNone},
			want: reconcile.Member{Name: "c", Address: "10.0.0.7"},
		},
	} {
		if got := toMember(tc.in); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestMarkBootstrapped: the raft tag is set once, and the other tags stay.
func TestMarkBootstrapped(t *testing.T) {
	p := startPool(t, "s")
	for range 2 {
		if err := p.MarkBootstrapped(); err != nil {
			t.Fatal(err)
		}
		local := p.Local()
		if local.Tags[tagRaft] != "1" || local.Tags[TagRole] != RoleClient {
			t.Fatalf("tags after MarkBootstrapped: %v", local.Tags)
		}
	}
}
