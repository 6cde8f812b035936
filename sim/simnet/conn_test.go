package simnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// pipePair dials from client to a fresh listener at addr and returns both ends.
func pipePair(t *testing.T, n *Network, client, addr string) (net.Conn, net.Conn, net.Listener) {
	t.Helper()
	ln, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.Dialer(client)(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return c, s, ln
}

func TestConnLatencyFIFOAndEOF(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 3, Link: Link{Latency: 5 * time.Millisecond, Jitter: 5 * time.Millisecond}})
		start := time.Now()
		c, s, ln := pipePair(t, n, "client-1", "n1:8500")
		defer ln.Close()
		if el := time.Since(start); el < 10*time.Millisecond || el > 20*time.Millisecond {
			t.Errorf("dial took %v, want one round trip in [10ms, 20ms]", el)
		}
		var want strings.Builder
		for i := range 200 {
			chunk := fmt.Sprintf("chunk-%03d;", i)
			want.WriteString(chunk)
			if _, err := c.Write([]byte(chunk)); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		got, err := io.ReadAll(s)
		if err != nil {
			t.Fatalf("server read: %v", err)
		}
		if string(got) != want.String() {
			t.Fatalf("stream reordered or lost under jitter:\n got %.80s…\nwant %.80s…", got, want.String())
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("write after close: %v", err)
		}
		s.Close()
	})
}

func TestConnDropsBecomeDelayThenBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 3, Link: Link{Latency: time.Millisecond, DropRate: 0.4}, MaxRetransmits: 100})
		c, s, ln := pipePair(t, n, "client-1", "n1:8500")
		defer ln.Close()
		msg := strings.Repeat("abcdefgh", 64)
		for i := 0; i < len(msg); i += 8 {
			if _, err := c.Write([]byte(msg[i : i+8])); err != nil {
				t.Fatal(err)
			}
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(s, buf); err != nil || string(buf) != msg {
			t.Fatalf("lossy link corrupted the stream: %v", err)
		}
		if tr.count(Drop, "") != 0 {
			t.Errorf("stream chunks were dropped instead of delayed: %v", tr.count(Drop, ""))
		}
		// A link that loses everything exhausts retransmits and breaks.
		if err := n.SetLink("client-1", "n1", Link{DropRate: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("lost")); err != nil {
			t.Fatalf("write is buffered and should succeed: %v", err)
		}
		if _, err := s.Read(buf); !errors.Is(err, ErrConnBroken) {
			t.Errorf("server read after retransmit limit: %v, want ErrConnBroken", err)
		}
		if _, err := c.Read(buf); !errors.Is(err, ErrConnBroken) {
			t.Errorf("client read after retransmit limit: %v, want ErrConnBroken", err)
		}
		c.Close()
		s.Close()
	})
}

func TestConnDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 3, Link: Link{Latency: time.Millisecond}})
		c, s, ln := pipePair(t, n, "client-1", "n1:8500")
		defer ln.Close()
		defer c.Close()
		defer s.Close()
		buf := make([]byte, 8)

		start := time.Now()
		s.SetReadDeadline(start.Add(100 * time.Millisecond))
		_, err := s.Read(buf)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past deadline: %v, want a timeout", err)
		}
		if el := time.Since(start); el != 100*time.Millisecond {
			t.Errorf("deadline fired after %v", el)
		}

		// Extending the deadline while a read waits keeps it waiting;
		// data then arrives before the new deadline.
		s.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		go func() {
			time.Sleep(20 * time.Millisecond)
			s.SetReadDeadline(time.Now().Add(time.Second))
			time.Sleep(100 * time.Millisecond)
			c.Write([]byte("late"))
		}()
		if k, err := s.Read(buf); err != nil || string(buf[:k]) != "late" {
			t.Fatalf("read with extended deadline: %q, %v", buf[:k], err)
		}

		// A deadline in the past aborts a blocked read at once (net/http
		// relies on this to stop its background read).
		s.SetReadDeadline(time.Time{})
		go func() {
			time.Sleep(30 * time.Millisecond)
			s.SetReadDeadline(time.Unix(1, 0))
		}()
		start = time.Now()
		if _, err := s.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read aborted by past deadline: %v", err)
		}
		if el := time.Since(start); el != 30*time.Millisecond {
			t.Errorf("abort took %v, want 30ms", el)
		}
		s.SetWriteDeadline(time.Unix(1, 0))
		if _, err := s.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("write past deadline: %v", err)
		}
	})
}

func TestDialRefusalsAndPartitionBreaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 3, Link: Link{Latency: time.Millisecond}})
		dial := n.Dialer("client-2")
		ctx := context.Background()
		start := time.Now()
		if _, err := dial(ctx, "tcp", "n1:8500"); !errors.Is(err, ErrRefused) {
			t.Fatalf("dial with no listener: %v", err)
		}
		if el := time.Since(start); el != 2*time.Millisecond {
			t.Errorf("refusal took %v, want one round trip", el)
		}
		for _, bad := range []string{"n1", ":8500", ""} {
			if _, err := dial(ctx, "tcp", bad); err == nil {
				t.Errorf("dial %q accepted", bad)
			}
		}
		if _, err := n.Listen("n1"); err == nil {
			t.Error("Listen without port accepted")
		}

		c, s, ln := pipePair(t, n, "client-2", "n1:8500")
		defer ln.Close()
		if _, err := n.Listen("n1:8500"); err == nil {
			t.Error("second Listen on a bound address accepted")
		}
		readErr := make(chan error, 1)
		go func() {
			_, err := s.Read(make([]byte, 1))
			readErr <- err
		}()
		if err := n.Partition([]string{"client-2"}, []string{"n1", "n2"}); err != nil {
			t.Fatal(err)
		}
		if err := <-readErr; !errors.Is(err, ErrConnBroken) {
			t.Errorf("blocked server read after partition: %v, want ErrConnBroken", err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, ErrConnBroken) {
			t.Errorf("client write after partition: %v", err)
		}
		start = time.Now()
		if _, err := dial(ctx, "tcp", "n1:8500"); !errors.Is(err, ErrRefused) {
			t.Errorf("dial across partition: %v", err)
		}
		if time.Since(start) != 0 {
			t.Error("dial across a partition should be refused at once")
		}
		if tr.count(Conn, "partition") != 2 { // one break, one refusal
			t.Errorf("conn events: %v", tr.all())
		}
		n.Heal()
		c2, err := dial(ctx, "tcp", "n1:8500")
		if err != nil {
			t.Fatalf("dial after heal: %v", err)
		}
		c.Close()
		s.Close()
		c2.Close()
	})
}

func TestDialWaitsForPausedServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 3, Link: Link{Latency: time.Millisecond}})
		ln, err := n.Listen("n1:8500")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if err := n.Pause("n1"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := n.Dialer("c")(ctx, "tcp", "n1:8500"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial to paused node: %v, want deadline exceeded", err)
		}
		go func() {
			time.Sleep(time.Second)
			n.Resume("n1")
		}()
		start := time.Now()
		c, err := n.Dialer("c")(context.Background(), "tcp", "n1:8500")
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != time.Second+time.Millisecond {
			t.Errorf("dial completed after %v, want resume + 1ms", el)
		}
		// The abandoned first dial was accepted on resume and then got EOF.
		s1, _ := ln.Accept()
		if _, err := s1.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("abandoned dial's server end: %v, want EOF", err)
		}
		s2, _ := ln.Accept()
		c.Close()
		s1.Close()
		s2.Close()
	})
}

// TestHTTPThroughPartition is the client-traffic check: an HTTP client cut off
// from its server fails while a connected one succeeds, and heal restores it.
func TestHTTPThroughPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNet(t, Options{Seed: 3, Link: Link{Latency: time.Millisecond, Jitter: time.Millisecond}})
		ln, err := n.Listen("n1:8500")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello %s", r.URL.Query().Get("who"))
		})}
		go srv.Serve(ln)
		client := func(name string) *http.Client {
			return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: n.Dialer(name)}}
		}
		c1, c2 := client("client-1"), client("client-2")
		get := func(c *http.Client, who string) (string, error) {
			resp, err := c.Get("http://n1:8500/?who=" + who)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}
		for _, c := range []*http.Client{c1, c2} {
			if body, err := get(c, "all"); err != nil || body != "hello all" {
				t.Fatalf("before partition: %q, %v", body, err)
			}
		}
		if err := n.Partition([]string{"client-2"}, []string{"n1"}); err != nil {
			t.Fatal(err)
		}
		if body, err := get(c1, "one"); err != nil || body != "hello one" {
			t.Errorf("connected client during partition: %q, %v", body, err)
		}
		if body, err := get(c2, "two"); err == nil {
			t.Errorf("partitioned client reached the server: %q", body)
		} else if !errors.Is(err, ErrRefused) && !errors.Is(err, ErrConnBroken) {
			t.Errorf("partitioned client error %v, want refused or broken", err)
		}
		n.Heal()
		if body, err := get(c2, "back"); err != nil || body != "hello back" {
			t.Errorf("after heal: %q, %v", body, err)
		}
		c1.CloseIdleConnections()
		c2.CloseIdleConnections()
		srv.Close()
		synctest.Wait()
	})
}

// TestDownNodeIsCutUntilUp: a node switched off breaks its connections and
// refuses dials both ways, Heal does not switch it back on, and Up does.
func TestDownNodeIsCutUntilUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, tr := newNet(t, Options{Seed: 3, Link: Link{Latency: time.Millisecond}})
		c, s, ln := pipePair(t, n, "client-2", "n1:8500")
		defer ln.Close()
		readErr := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 1))
			readErr <- err
		}()
		if err := n.Down("n1"); err != nil {
			t.Fatal(err)
		}
		if err := <-readErr; !errors.Is(err, ErrConnBroken) {
			t.Errorf("a read from a node that went down: %v, want ErrConnBroken", err)
		}
		if _, err := s.Write([]byte("x")); !errors.Is(err, ErrConnBroken) {
			t.Errorf("a write from the node that went down: %v, want ErrConnBroken", err)
		}
		ctx := context.Background()
		for _, from := range []string{"client-2", "n1"} {
			to := map[string]string{"client-2": "n1:8500", "n1": "client-2:1"}[from]
			if _, err := n.Dialer(from)(ctx, "tcp", to); !errors.Is(err, ErrRefused) {
				t.Errorf("dial %s -> %s with n1 down: %v, want ErrRefused", from, to, err)
			}
		}
		// The dead node's own dial is not traced (whether a dying
		// process still redials is the scheduler's choice); the live
		// node's refused dial is.
		refused := 0
		for _, e := range tr.all() {
			if e.Kind == Conn && strings.HasPrefix(e.Msg, "refuse ") {
				refused++
			}
		}
		if refused != 1 {
			t.Errorf("%d refused dials traced, want 1 (client-2's, not n1's)", refused)
		}
		n.Heal()
		if _, err := n.Dialer("client-2")(ctx, "tcp", "n1:8500"); !errors.Is(err, ErrRefused) {
			t.Errorf("Heal brought a node that is down back: %v", err)
		}
		n.Up("n1")
		c2, err := n.Dialer("client-2")(ctx, "tcp", "n1:8500")
		if err != nil {
			t.Fatalf("dial after Up: %v", err)
		}
		c.Close()
		s.Close()
		c2.Close()
	})
}
