package simnet

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
)

func TestRPCLatencyAndJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 1, Link: Link{Latency: 10 * time.Millisecond}})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b:8300")
		respond(b)
		defer a.Close()
		defer b.Close()

		var resp raft.AppendEntriesResponse
		start := time.Now()
		if err := a.AppendEntries("b", "b:8300", ae(3, "x"), &resp); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 20*time.Millisecond {
			t.Errorf("round trip took %v, want 20ms", el)
		}
		if !resp.Success || resp.Term != 3 || resp.LastLog != 2 {
			t.Errorf("reply = %+v", resp)
		}
		evs := tr.all()
		if len(evs) < 4 || evs[len(evs)-1].Kind != Deliver || evs[len(evs)-1].At != 20*time.Millisecond {
			t.Errorf("trace does not end with the reply's delivery at 20ms: %v", evs)
		}

		if err := n.SetDefaultLink(Link{Latency: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		seen := map[time.Duration]bool{}
		for range 50 {
			start := time.Now()
			if err := a.AppendEntries("b", "b:8300", ae(3), &resp); err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			if el < 20*time.Millisecond || el > 30*time.Millisecond {
				t.Fatalf("round trip with jitter took %v, want [20ms, 30ms]", el)
			}
			seen[el] = true
		}
		if len(seen) < 10 {
			t.Errorf("jitter produced only %d distinct round trips in 50", len(seen))
		}
	})
}

func TestLostRequestCostsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 1, Link: Link{Latency: time.Millisecond}, RPCTimeout: 300 * time.Millisecond})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		rb := respond(b)
		defer a.Close()
		defer b.Close()
		if err := n.PartitionOneWay([]string{"a"}, []string{"b"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var resp raft.RequestVoteResponse
		err := a.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 2}, &resp)
		if !errors.Is(err, ErrRPCTimeout) {
			t.Fatalf("err = %v, want ErrRPCTimeout", err)
		}
		if el := time.Since(start); el != 300*time.Millisecond {
			t.Errorf("lost request cost %v, want the 300ms RPC timeout", el)
		}
		if got := rb.received(); len(got) != 0 {
			t.Errorf("b received %d requests across a cut", len(got))
		}
		if tr.count(Drop, "partition") != 1 || tr.count(Timeout, "") != 1 {
			t.Errorf("trace lacks the drop and the timeout: %v", tr.all())
		}
	})
}

func TestLostReplyCostsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 1, Link: Link{Latency: time.Millisecond}, RPCTimeout: 300 * time.Millisecond})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		rb := respond(b)
		defer a.Close()
		defer b.Close()
		if err := n.PartitionOneWay([]string{"b"}, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var resp raft.AppendEntriesResponse
		err := a.AppendEntries("b", "b", ae(1, "v"), &resp)
		if !errors.Is(err, ErrRPCTimeout) {
			t.Fatalf("err = %v, want ErrRPCTimeout", err)
		}
		if el := time.Since(start); el != 300*time.Millisecond {
			t.Errorf("lost reply cost %v, want the 300ms RPC timeout", el)
		}
		if got := rb.received(); len(got) != 1 {
			t.Errorf("b received %d requests, want 1 (only the reply is lost)", len(got))
		}
		if tr.count(Drop, "partition") != 1 {
			t.Errorf("reply drop not traced: %v", tr.all())
		}
	})
}

func TestDropRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			rate     float64
			min, max int // timeouts out of 1000; P(ok) = (1-rate)^2
		}{{0, 0, 0}, {0.3, 440, 580}, {1, 1000, 1000}} {
			n, _ := newNet(t, Options{Seed: 7, Link: Link{Latency: time.Millisecond, DropRate: tc.rate}, RPCTimeout: 50 * time.Millisecond})
			a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
			respond(b)
			timeouts := 0
			var resp raft.AppendEntriesResponse
			for range 1000 {
				if err := a.AppendEntries("b", "b", ae(1), &resp); errors.Is(err, ErrRPCTimeout) {
					timeouts++
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if timeouts < tc.min || timeouts > tc.max {
				t.Errorf("drop rate %v: %d timeouts of 1000, want [%d, %d]", tc.rate, timeouts, tc.min, tc.max)
			}
			if st := n.Stats(); st.Timeouts != uint64(timeouts) {
				t.Errorf("Stats.Timeouts = %d, want %d", st.Timeouts, timeouts)
			}
			a.Close()
			b.Close()
		}
	})
}

func TestPauseHoldsAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 1, Link: Link{Latency: time.Millisecond}, RPCTimeout: 100 * time.Millisecond})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		rb := respond(b)
		defer a.Close()
		defer b.Close()
		if err := n.Pause("b"); err != nil {
			t.Fatal(err)
		}
		var resp raft.AppendEntriesResponse
		if err := a.AppendEntries("b", "b", ae(5, "stale"), &resp); !errors.Is(err, ErrRPCTimeout) {
			t.Fatalf("call to paused node: err = %v, want ErrRPCTimeout", err)
		}
		time.Sleep(time.Second)
		if len(rb.received()) != 0 {
			t.Fatal("paused node received a request")
		}
		if tr.count(Hold, "receiver paused") != 1 {
			t.Fatalf("hold not traced: %v", tr.all())
		}
		resumeAt := n.Elapsed()
		if err := n.Resume("b"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := rb.received()
		if len(got) != 1 || got[0].(*raft.AppendEntriesRequest).Term != 5 {
			t.Fatalf("after resume b received %v, want the stale request", got)
		}
		time.Sleep(10 * time.Millisecond)
		var delivered, late bool
		for _, e := range tr.all() {
			if e.Kind == Deliver && e.To == "b" && e.At == resumeAt {
				delivered = true
			}
			if e.Kind == Drop && e.Note == "caller gave up" {
				late = true
			}
		}
		if !delivered || !late {
			t.Errorf("want delivery at resume (%v) and a late reply: %v", resumeAt, tr.all())
		}

		// A paused sender holds its own messages until resumed.
		if err := n.Pause("a"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- a.AppendEntries("b", "b", ae(6), &raft.AppendEntriesResponse{}) }()
		time.Sleep(50 * time.Millisecond)
		if len(rb.received()) != 1 {
			t.Fatal("message left a paused sender")
		}
		if err := n.Resume("a"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Errorf("call resumed within its timeout failed: %v", err)
		}
		if len(rb.received()) != 2 {
			t.Error("held message not sent on resume")
		}
	})
}

func TestIsolateHealAndInFlightLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 1, Link: Link{Latency: 20 * time.Millisecond}, RPCTimeout: 100 * time.Millisecond})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		rb := respond(b)
		defer a.Close()
		defer b.Close()
		var resp raft.AppendEntriesResponse
		if err := n.Isolate("b"); err != nil {
			t.Fatal(err)
		}
		if err := a.AppendEntries("b", "b", ae(1), &resp); !errors.Is(err, ErrRPCTimeout) {
			t.Fatalf("isolated: err = %v", err)
		}
		n.Heal()
		if err := a.AppendEntries("b", "b", ae(1), &resp); err != nil {
			t.Fatalf("healed: %v", err)
		}
		// Cut while the request is on the wire: it is lost in flight.
		go func() {
			time.Sleep(10 * time.Millisecond)
			if err := n.Partition([]string{"a"}, []string{"b"}); err != nil {
				t.Error(err)
			}
		}()
		if err := a.AppendEntries("b", "b", ae(1), &resp); !errors.Is(err, ErrRPCTimeout) {
			t.Fatalf("cut in flight: err = %v", err)
		}
		if tr.count(Drop, "cut in flight") != 1 || len(rb.received()) != 1 {
			t.Errorf("want one in-flight loss and one delivered request; got %d received, trace %v", len(rb.received()), tr.all())
		}
	})
}

func TestDeepCopyOnSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 1, Link: Link{Latency: 10 * time.Millisecond}})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		rb := respond(b)
		defer a.Close()
		defer b.Close()
		req := ae(1, "orig")
		done := make(chan error, 1)
		go func() { done <- a.AppendEntries("b", "b", req, &raft.AppendEntriesResponse{}) }()
		synctest.Wait() // the request is on the wire; now the sender scribbles on it
		req.Entries[0].Data[0] = 'X'
		req.Entries[0] = &raft.Log{Data: []byte("other")}
		req.Term = 99
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := rb.received()[0].(*raft.AppendEntriesRequest)
		if got.Term != 1 || string(got.Entries[0].Data) != "orig" {
			t.Errorf("receiver saw sender's later writes: term %d data %q", got.Term, got.Entries[0].Data)
		}
	})
}

func TestInstallSnapshotAndTimeoutNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 1, Link: Link{Latency: time.Millisecond}})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		rb := respond(b)
		defer a.Close()
		defer b.Close()
		payload := []byte(strings.Repeat("snap", 250))
		var resp raft.InstallSnapshotResponse
		req := &raft.InstallSnapshotRequest{Term: 4, Size: int64(len(payload))}
		if err := a.InstallSnapshot("b", "b", req, &resp, strings.NewReader(string(payload))); err != nil {
			t.Fatal(err)
		}
		if !resp.Success || string(rb.data[0]) != string(payload) {
			t.Errorf("snapshot not carried intact: resp %+v, %d bytes", resp, len(rb.data[0]))
		}
		short := &raft.InstallSnapshotRequest{Term: 4, Size: 10}
		if err := a.InstallSnapshot("b", "b", short, &resp, strings.NewReader("abc")); err == nil {
			t.Error("short snapshot reader accepted")
		}
		if err := a.TimeoutNow("b", "b", &raft.TimeoutNowRequest{}, &raft.TimeoutNowResponse{}); err != nil {
			t.Error(err)
		}
		if err := a.RequestPreVote("b", "b", &raft.RequestPreVoteRequest{Term: 2}, &raft.RequestPreVoteResponse{}); err != nil {
			t.Error(err)
		}
		if p, err := a.AppendEntriesPipeline("b", "b"); p != nil || !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
			t.Errorf("pipeline = %v, %v", p, err)
		}
		if got := a.DecodePeer(a.EncodePeer("b", "b:8300")); got != "b:8300" {
			t.Errorf("peer round trip = %q", got)
		}
	})
}

func TestTransportCloseAndRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 1, Link: Link{Latency: time.Millisecond}, RPCTimeout: 100 * time.Millisecond})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		defer a.Close()
		if _, err := n.NewTransport("b"); err == nil {
			t.Fatal("second open transport at the same address accepted")
		}
		// b never answers: close a while its call waits.
		done := make(chan error, 1)
		go func() { done <- a.AppendEntries("b", "b", ae(1), &raft.AppendEntriesResponse{}) }()
		time.Sleep(10 * time.Millisecond)
		b.Close()
		if err := <-done; !errors.Is(err, ErrRPCTimeout) {
			t.Fatalf("call to a node that closed: err = %v", err)
		}
		if err := a.AppendEntries("b", "b", ae(1), &raft.AppendEntriesResponse{}); !errors.Is(err, ErrRPCTimeout) {
			t.Fatalf("call to a closed address: err = %v", err)
		}
		if tr.count(Drop, "no transport at b") != 1 {
			t.Errorf("drop to closed address not traced: %v", tr.all())
		}
		b2 := newTrans(t, n, "b") // restart at the same address
		respond(b2)
		defer b2.Close()
		if err := a.AppendEntries("b", "b", ae(1), &raft.AppendEntriesResponse{}); err != nil {
			t.Fatalf("call to restarted node: %v", err)
		}
		go func() {
			time.Sleep(time.Millisecond / 2)
			a.Close()
		}()
		if err := a.RequestVote("b", "b", &raft.RequestVoteRequest{}, &raft.RequestVoteResponse{}); !errors.Is(err, ErrTransportShutdown) {
			t.Errorf("call on closing transport: err = %v, want ErrTransportShutdown", err)
		}
		if err := a.RequestVote("b", "b", &raft.RequestVoteRequest{}, &raft.RequestVoteResponse{}); !errors.Is(err, ErrTransportShutdown) {
			t.Errorf("call on closed transport: err = %v, want ErrTransportShutdown", err)
		}
	})
}

func TestBadInputChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, o := range []Options{
			{Link: Link{Latency: -1}},
			{Link: Link{Jitter: -1}},
			{Link: Link{DropRate: 1.5}},
			{Link: Link{DropRate: math.NaN()}},
			{RPCTimeout: -1},
		} {
			if _, err := New(o); err == nil {
				t.Errorf("New(%+v) accepted", o)
			}
		}
		n, _ := newNet(t, Options{Seed: 1, Link: Link{Latency: time.Millisecond}, RPCTimeout: 100 * time.Millisecond})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		respond(b)
		defer a.Close()
		defer b.Close()
		bad := []error{
			n.SetDefaultLink(Link{DropRate: -0.1}),
			n.SetLink("a", "b", Link{DropRate: 2}),
			n.SetLink("", "b", Link{}),
			n.Partition([]string{"a"}, []string{"a", "b"}),
			n.Partition(nil, []string{"b"}),
			n.Partition([]string{""}, []string{"b"}),
			n.PartitionOneWay([]string{"a"}, nil),
			n.Isolate(""),
			n.Pause(""),
			n.Resume("a"),
		}
		if err := n.Pause("a"); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, n.Pause("a"))
		if err := n.Resume("a"); err != nil {
			t.Fatal(err)
		}
		_, err := n.NewTransport("")
		bad = append(bad, err)
		for i, err := range bad {
			if err == nil {
				t.Errorf("bad input %d accepted", i)
			}
		}
		start := time.Now()
		if err := a.AppendEntries("b", "b", ae(1), &raft.AppendEntriesResponse{}); err != nil {
			t.Fatalf("network changed by rejected input: %v", err)
		}
		if el := time.Since(start); el != 2*time.Millisecond {
			t.Errorf("link changed by rejected input: round trip %v", el)
		}
	})
}

func TestSameSeedSameDraws(t *testing.T) {
	run := func(seed uint64) []string {
		var out []string
		synctest.Test(t, func(t *testing.T) {
			n, tr := newNet(t, Options{Seed: seed, Link: Link{Latency: time.Millisecond, Jitter: time.Millisecond, DropRate: 0.2}, RPCTimeout: 20 * time.Millisecond})
			a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
			respond(b)
			for range 200 {
				_ = a.AppendEntries("b", "b", ae(1), &raft.AppendEntriesResponse{})
			}
			a.Close()
			b.Close()
			for _, e := range tr.all() {
				out = append(out, e.String())
			}
		})
		return out
	}
	first, again, other := run(42), run(42), run(43)
	if strings.Join(first, "\n") != strings.Join(again, "\n") {
		t.Error("same seed gave different traces for a single-caller workload")
	}
	if strings.Join(first, "\n") == strings.Join(other, "\n") {
		t.Error("different seeds gave the same trace")
	}
}

func TestNetworkCloseReleasesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 1, Link: Link{Latency: time.Millisecond}})
		a, b := newTrans(t, n, "a"), newTrans(t, n, "b")
		respond(b)
		ln, err := n.Listen("b:80")
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Pause("b"); err != nil {
			t.Fatal(err)
		}
		dialErr := make(chan error, 1)
		go func() {
			_, err := n.Dialer("c")(context.Background(), "tcp", "b:80")
			dialErr <- err
		}()
		acceptErr := make(chan error, 1)
		go func() {
			_, err := ln.Accept()
			acceptErr <- err
		}()
		time.Sleep(time.Second)
		n.Close()
		if err := <-dialErr; !errors.Is(err, ErrRefused) {
			t.Errorf("dial held at a paused node after Close: %v, want refused", err)
		}
		if err := <-acceptErr; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
		if err := a.AppendEntries("b", "b", ae(1), &raft.AppendEntriesResponse{}); !errors.Is(err, ErrTransportShutdown) {
			t.Errorf("call after Close: %v", err)
		}
		if _, err := n.NewTransport("d"); !errors.Is(err, ErrNetworkClosed) {
			t.Errorf("NewTransport after Close: %v", err)
		}
		n.Close() // idempotent
	})
}
