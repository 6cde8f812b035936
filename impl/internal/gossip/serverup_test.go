package gossip

import (
	"testing"
	"time"
)

// upCounter counts ServerUp calls on a channel, so a test can wait for one.
type upCounter chan struct{}

func (u upCounter) hook() { u <- struct{}{} }

func (u upCounter) wait(t *testing.T, who, what string) {
	t.Helper()
	select {
	case <-u:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s never heard %s", who, what)
	}
}

func (u upCounter) none(t *testing.T, who, what string) {
	t.Helper()
	select {
	case <-u:
		t.Fatalf("%s heard %s", who, what)
	default:
	}
}

func startWithUp(t *testing.T, name, role string) (*Pool, upCounter) {
	t.Helper()
	up := make(upCounter, 16)
	p, err := Start(Config{NodeName: name, BindAddr: "127.0.0.1", Timing: DevTiming,
		Tags: map[string]string{TagRole: role}, ServerUp: up.hook})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p, up
}

// TestServerUpNotices: a client hears ServerUp when a server joins, a
// server does not hear it for a joining client; every member, the leader
// included, hears a new leader's announcement.
func TestServerUpNotices(t *testing.T) {
	s1, up1 := startWithUp(t, "s1", RoleServer)
	c1, upc := startWithUp(t, "c1", RoleClient)
	if _, err := c1.Join([]string{s1.Local().Addr()}); err != nil {
		t.Fatal(err)
	}
	upc.wait(t, "the client", "the server join")
	for deadline := time.Now().Add(20 * time.Second); len(s1.List()) != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server never saw the client")
		}
	}
	up1.none(t, "the server", "a client's join as a server's")

	if err := s1.AnnounceLeader(); err != nil {
		t.Fatal(err)
	}
	up1.wait(t, "the leader", "its own announcement")
	upc.wait(t, "the client", "the new leader")
}
