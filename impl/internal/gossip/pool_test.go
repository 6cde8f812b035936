package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/tenurekv/tenure/impl/internal/reconcile"
	"github.com/tenurekv/tenure/impl/internal/server"
)

func startPool(t *testing.T, name string) *Pool {
	t.Helper()
	p, err := Start(Config{NodeName: name, BindAddr: "127.0.0.1", BindPort: 0, Timing: DevTiming,
		Tags: map[string]string{TagRole: RoleClient}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// waitChange waits for a change of member name to status on p.
func waitChange(t *testing.T, p *Pool, name string, status reconcile.Status) reconcile.Member {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case m := <-p.Changes():
			if m.Name == name && m.Status == status {
				return m
			}
		case <-deadline:
			t.Fatalf("%s never saw %s become %s", p.Local().Name, name, status)
		}
	}
}

// TestPoolMembership: members that join are seen alive at the gossip
// address they advertise; a member that stops without leaving is seen
// failed, one that leaves is seen left; force-leave names an unknown node
// as Consul does.
func TestPoolMembership(t *testing.T) {
	a, b, c := startPool(t, "a"), startPool(t, "b"), startPool(t, "c")
	for _, p := range []*Pool{b, c} {
		if n, err := p.Join([]string{a.Local().Addr()}); err != nil || n != 1 {
			t.Fatalf("join: %d %v", n, err)
		}
	}
	if m := waitChange(t, a, "c", reconcile.Alive); m.Address != "127.0.0.1" {
		t.Fatalf("c's catalog address %q, want its gossip address 127.0.0.1", m.Address)
	}
	// Under load a can report c alive before its list shows b (seen in a
	// mutation run), so wait for the list rather than read it once.
	for deadline := time.Now().Add(20 * time.Second); len(a.List()) != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a knows %d members, want 3", len(a.List()))
		}
	}
	if len(a.Members()) != 3 {
		t.Fatalf("a's reconcile view has %d members, want 3", len(a.Members()))
	}

	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitChange(t, a, "c", reconcile.Failed)

	if err := b.Leave(); err != nil {
		t.Fatal(err)
	}
	waitChange(t, a, "b", reconcile.Left)

	if err := a.ForceLeave("nobody", false); err == nil || !strings.Contains(err.Error(), "No node found with name 'nobody'") {
		t.Fatalf("force-leave of an unknown node: %v", err)
	}
	if err := a.ForceLeave("c", true); err != nil {
		t.Fatalf("force-leave of failed c: %v", err)
	}
	waitChange(t, a, "c", reconcile.Left)
}

// TestStartRejectsBadInput: a pool needs a name, and a gossip key must be
// 16, 24 or 32 bytes.
func TestStartRejectsBadInput(t *testing.T) {
	if _, err := Start(Config{BindAddr: "127.0.0.1"}); err == nil {
		t.Error("a pool without a node name started")
	}
	if _, err := Start(Config{NodeName: "x", BindAddr: "127.0.0.1", EncryptKey: []byte("short")}); err == nil || !strings.Contains(err.Error(), "encrypt key") {
		t.Errorf("a 5-byte key: %v", err)
	}
}

var _ server.Membership = (*Pool)(nil)
