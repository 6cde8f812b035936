package agent_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// shortLimits makes every connection bound short enough for a test to
// outlast it; the bounds are what is tested, not their values.
func shortLimits(cfg *agent.Config) {
	// The idle timeout keeps its default: a short one would only race the
	// client's reuse of idle connections.
	cfg.Limits = agent.HTTPLimits{ReadHeaderTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond}
}

// stallAndWaitClose sends raw, then stalls and reads until the server
// closes the connection, giving up after bound (the test's own safety net;
// the server's limits are 200 ms).
func stallAndWaitClose(addr, raw string, bound time.Duration) (string, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		return "", err
	}
	if err := conn.SetReadDeadline(time.Now().Add(bound)); err != nil {
		return "", err
	}
	got, err := io.ReadAll(conn)
	if err != nil {
		return string(got), fmt.Errorf("connection still open after a stalled request: %w", err)
	}
	return string(got), nil
}

const stalledBody = "PUT /v1/kv/stalled HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789"

// A client that sends headers and part of a body, then stalls, loses its
// connection, and the partial write changes nothing.
func TestStalledBodyIsCut(t *testing.T) {
	a := agenttest.StartDevAgent(t, shortLimits)
	got, err := stallAndWaitClose(a.HTTPAddr(), stalledBody, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("stalled body answered %q", got)
	}
	if p, _, err := client(t, a.HTTPAddr()).KV().Get("stalled", nil); err != nil || p != nil {
		t.Fatalf("stalled write stored %+v (%v)", p, err)
	}
}

// A client that stalls inside its headers loses its connection too.
func TestStalledHeadersAreCut(t *testing.T) {
	a := agenttest.StartDevAgent(t, shortLimits)
	if _, err := stallAndWaitClose(a.HTTPAddr(), "GET /v1/kv/x HTTP/1.1\r\nHost: x\r\n", time.Minute); err != nil {
		t.Fatal(err)
	}
}

// Headers above the bound are refused with 431 before any handler runs.
func TestOversizedHeadersRefused(t *testing.T) {
	a := agenttest.StartDevAgent(t, nil)
	req, err := http.NewRequest(http.MethodGet, "http://"+a.HTTPAddr()+"/v1/kv/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Padding", strings.Repeat("p", 128<<10))
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("128 KiB of headers answered %d", resp.StatusCode)
	}
}

// blockingReadsOutlast checks that blocking reads park far longer than the
// 200 ms bounds and still answer: one until its wait runs out, one until a
// write wakes it.
func blockingReadsOutlast(t *testing.T, addr string) error {
	c := client(t, addr)
	if _, err := c.KV().Put(&api.KVPair{Key: "k", Value: []byte("v")}, nil); err != nil {
		return err
	}
	_, meta, err := c.KV().Get("k", nil)
	if err != nil {
		return err
	}
	p, meta2, err := c.KV().Get("k", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 1500 * time.Millisecond})
	if err != nil || p == nil || meta2.LastIndex != meta.LastIndex {
		return fmt.Errorf("blocking read until its wait ends: %+v %+v %v", p, meta2, err)
	}
	woke := make(chan error, 1)
	go func() {
		p, _, err := c.KV().Get("k", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		if err == nil && (p == nil || string(p.Value) != "w") {
			err = fmt.Errorf("answered %+v before the write", p)
		}
		woke <- err
	}()
	time.Sleep(time.Second) // outlast the bounds; nothing is asserted on time
	if _, err := c.KV().Put(&api.KVPair{Key: "k", Value: []byte("w")}, nil); err != nil {
		return err
	}
	if err := <-woke; err != nil {
		return fmt.Errorf("blocking read woken by a write: %w", err)
	}
	return nil
}

func TestBlockingReadOutlastsConnectionBounds(t *testing.T) {
	a := agenttest.StartDevAgent(t, shortLimits)
	if err := blockingReadsOutlast(t, a.HTTPAddr()); err != nil {
		t.Fatal(err)
	}
}

// naiveServer serves the API with net/http's own timeouts only, the
// obvious configuration the agent must not use: WriteTimeout cuts blocking
// reads and, without ReadTimeout, a stalled body is never cut.
func naiveServer(t *testing.T) string {
	srv, err := server.NewServer(server.Config{NodeName: "dev", HTTPAddr: "127.0.0.1:0", Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: httpapi.New(srv, httpapi.Options{}), ReadHeaderTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		if err := errors.Join(hs.Close(), srv.Shutdown()); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-srv.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("naive server never registered itself")
	}
	return ln.Addr().String()
}

// The checks above catch both mistakes they guard against.
func TestConnectionBoundChecksCatchNaiveServer(t *testing.T) {
	addr := naiveServer(t)
	if err := blockingReadsOutlast(t, addr); err == nil || !strings.Contains(err.Error(), "blocking read") {
		t.Errorf("blocking-read check answered %v against a server whose WriteTimeout cuts blocking reads", err)
	}
	if _, err := stallAndWaitClose(addr, stalledBody, 2*time.Second); err == nil {
		t.Error("stalled-body check passed against a server without a body read bound")
	}
}
