package simnet

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPackets: datagrams arrive after the link's latency with their
// sender's address; they are lost across a cut, at DropRate, with no
// listener, and after the receiver closes; paused receivers get them on
// resume; a closed endpoint cannot send.
func TestPackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 1, Link: Link{Latency: 5 * time.Millisecond}})
		a, err := n.ListenPacket("a:8301")
		if err != nil {
			t.Fatal(err)
		}
		b, err := n.ListenPacket("b:8301")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.ListenPacket("b:8301"); err == nil {
			t.Fatal("an address was bound twice")
		}
		start := time.Now()
		if err := a.SendTo([]byte("ping"), "b:8301"); err != nil {
			t.Fatal(err)
		}
		p := <-b.Packets()
		if string(p.Data) != "ping" || p.From != "a:8301" || time.Since(start) != 5*time.Millisecond {
			t.Fatalf("got %+v after %v", p, time.Since(start))
		}

		expectLost := func(what string) {
			t.Helper()
			time.Sleep(time.Second)
			select {
			case p := <-b.Packets():
				t.Fatalf("%s: packet %+v delivered", what, p)
			default:
			}
		}
		if err := n.Partition([]string{"a"}, []string{"b"}); err != nil {
			t.Fatal(err)
		}
		_ = a.SendTo([]byte("cut"), "b:8301")
		expectLost("across a partition")
		n.Heal()

		if err := n.SetLink("a", "b", Link{Latency: time.Millisecond, DropRate: 1}); err != nil {
			t.Fatal(err)
		}
		_ = a.SendTo([]byte("dropped"), "b:8301")
		expectLost("at DropRate 1")
		n.ResetLinks()

		_ = a.SendTo([]byte("nobody"), "c:8301")
		time.Sleep(time.Second)
		if tr.count(Drop, "no packet listener on c:8301") != 1 {
			t.Fatal("a packet to an unbound address was not lost as such")
		}

		if err := n.Pause("b"); err != nil {
			t.Fatal(err)
		}
		_ = a.SendTo([]byte("held"), "b:8301")
		expectLost("to a paused receiver, before resume")
		if err := n.Resume("b"); err != nil {
			t.Fatal(err)
		}
		if p := <-b.Packets(); string(p.Data) != "held" {
			t.Fatalf("after resume got %q", p.Data)
		}

		b.Close()
		_ = a.SendTo([]byte("closed"), "b:8301")
		time.Sleep(time.Second)
		a.Close()
		if err := a.SendTo([]byte("x"), "b:8301"); err == nil {
			t.Fatal("a closed endpoint sent")
		}
		n.Close()
	})
}

// TestResumeSettlesEachDelivery: with Options.Settle, a resumed node takes
// its held messages one at a time, so what its goroutines do with them
// follows the order they were held in, not which reader the scheduler
// runs first. Without Settle both readers' packets are queued at once and
// each reader drains its own queue in one go (x1 x2 y1 y2 or y1 y2 x1 x2).
func TestResumeSettlesEachDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 1, Link: Link{Latency: 5 * time.Millisecond}, Settle: synctest.Wait})
		defer n.Close()
		a, err := n.ListenPacket("a:1")
		if err != nil {
			t.Fatal(err)
		}
		order := twoReaders(t, n)
		if err := n.Pause("b"); err != nil {
			t.Fatal(err)
		}
		for _, m := range []struct{ data, to string }{{"x1", "b:1"}, {"y1", "b:2"}, {"x2", "b:1"}, {"y2", "b:2"}} {
			if err := a.SendTo([]byte(m.data), m.to); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		if err := n.Resume("b"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := order(); got != "x1 y1 x2 y2" {
			t.Fatalf("resumed node handled its held packets as %q, want them in held order", got)
		}
	})
}

// TestSettleEachArrivalAtOneInstant: with Options.Settle, datagrams due at
// one instant reach their readers one at a time, in delivery order (link,
// then send order), not each reader's backlog in one go.
func TestSettleEachArrivalAtOneInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 1, Link: Link{Latency: 5 * time.Millisecond}, Settle: synctest.Wait})
		defer n.Close()
		a, err := n.ListenPacket("a:1")
		if err != nil {
			t.Fatal(err)
		}
		order := twoReaders(t, n)
		for _, m := range []struct{ data, to string }{{"x1", "b:1"}, {"y1", "b:2"}, {"x2", "b:1"}, {"y2", "b:2"}} {
			if err := a.SendTo([]byte(m.data), m.to); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		if got := order(); got != "x1 y1 x2 y2" {
			t.Fatalf("datagrams due at one instant were handled as %q, want them in delivery order", got)
		}
	})
}

// twoReaders starts a reader on b:1 and one on b:2, each recording every
// datagram it takes, until the test ends; order returns what they took, in
// the order they took it.
func twoReaders(t *testing.T, n *Network) (order func() string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	for _, port := range []string{"b:1", "b:2"} {
		ep, err := n.ListenPacket(port)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				select {
				case p := <-ep.Packets():
					mu.Lock()
					got = append(got, string(p.Data))
					mu.Unlock()
				case <-done:
					return
				}
			}
		}()
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(got, " ")
	}
}
