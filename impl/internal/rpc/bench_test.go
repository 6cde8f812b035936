package rpc

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The cost of one forwarding hop, as a follower pays it for a small write:
// the incoming request goes to the leader and the leader's answer is
// written back. "pool" is this package (a net/rpc call on a shared
// connection to the server port); "proxy" is what it replaced, httputil.ReverseProxy
// over a keep-alive http.Transport to the leader's HTTP API. Both run over
// loopback TCP to a handler that reads the body and answers "true", so the
// difference is the hop alone.
//
//	go test -run '^$' -bench Hop -benchmem -count 5 ./impl/internal/rpc
//
// "pool-parallel-64" runs 64 callers at once over one Pool, as a loaded
// follower does, and reports the writes that reached the sockets per hop:
// srv-writes/op for the leader's answers, cli-writes/op for the requests.
// "pool-parallel-64-commit" answers as a raft leader does: requests wait for
// the next "commit", one every 100 µs (an fsync's time), which answers all
// that arrived meanwhile at once.

var leaderHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("X-Consul-Index", "12")
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, "true")
})

func smallPut() *http.Request {
	return httptest.NewRequest(http.MethodPut, "/v1/kv/service/leader?acquire=5f0c2b6e-0b6e-4d0a-9a63-7d1f0c1d2e3f",
		strings.NewReader("node-3"))
}

// viaPool forwards r as a follower does: frame it, send it, write the answer.
func viaPool(b *testing.B, p *Pool, addr string, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	resp, err := p.Forward(r.Context(), addr, &Request{Origin: Origin{Node: "node-f", Forwarded: true},
		Method: r.Method, URI: r.URL.RequestURI(), Header: http.Header{}, Body: body})
	if err != nil {
		b.Fatal(err)
	}
	w := httptest.NewRecorder()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
	if w.Code != http.StatusOK {
		b.Fatalf("status %d", w.Code)
	}
}

func proxyTo(b *testing.B) (*httputil.ReverseProxy, func()) {
	leader := httptest.NewServer(leaderHandler)
	target, _ := url.Parse(leader.URL)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: tr,
		ErrorHandler: func(_ http.ResponseWriter, _ *http.Request, err error) {
			b.Errorf("proxy: %v", err)
		},
	}
	return proxy, func() { tr.CloseIdleConnections(); leader.Close() }
}

func viaProxy(b *testing.B, proxy *httputil.ReverseProxy, r *http.Request) {
	w := httptest.NewRecorder()
	proxy.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		b.Fatalf("status %d", w.Code)
	}
}

func BenchmarkHop(b *testing.B) {
	b.Run("pool", func(b *testing.B) {
		_, addr := port(b, leaderHandler)
		p := NewPool(PoolConfig{})
		defer p.Close()
		viaPool(b, p, addr, smallPut()) // dial outside the timing
		b.ResetTimer()
		for b.Loop() {
			viaPool(b, p, addr, smallPut())
		}
	})
	b.Run("proxy", func(b *testing.B) {
		proxy, stop := proxyTo(b)
		defer stop()
		viaProxy(b, proxy, smallPut())
		b.ResetTimer()
		for b.Loop() {
			viaProxy(b, proxy, smallPut())
		}
	})
	b.Run("pool-parallel", func(b *testing.B) {
		_, addr := port(b, leaderHandler)
		p := NewPool(PoolConfig{})
		defer p.Close()
		viaPool(b, p, addr, smallPut())
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				viaPool(b, p, addr, smallPut())
			}
		})
	})
	b.Run("proxy-parallel", func(b *testing.B) {
		proxy, stop := proxyTo(b)
		defer stop()
		viaProxy(b, proxy, smallPut())
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				viaProxy(b, proxy, smallPut())
			}
		})
	})
	b.Run("pool-parallel-64", func(b *testing.B) { benchPoolMany(b, leaderHandler) })
	b.Run("pool-parallel-64-commit", func(b *testing.B) {
		c := newCommitter()
		defer c.stop()
		benchPoolMany(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.wait()
			leaderHandler(w, r)
		}))
	})
}

// benchPoolMany is BenchmarkHop's pool-parallel-64: 64 concurrent callers
// on one Pool, the writes on both ends counted.
func benchPoolMany(b *testing.B, h http.Handler) {
	var srvWrites, cliWrites atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := NewServer(nil)
	srv.SetHandler(h)
	d := NewDemux(countingListener{Listener: ln, writes: &srvWrites}, srv, nil, nil, nil)
	defer d.Close()
	addr := ln.Addr().String()
	p := NewPool(PoolConfig{Dial: func(ctx context.Context, a string) (net.Conn, error) {
		var nd net.Dialer
		c, err := nd.DialContext(ctx, "tcp", a)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, writes: &cliWrites}, nil
	}})
	defer p.Close()
	for range connsPerServer { // dial every connection outside the timing
		viaPool(b, p, addr, smallPut())
	}
	srvWrites.Store(0)
	cliWrites.Store(0)
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			viaPool(b, p, addr, smallPut())
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(srvWrites.Load())/float64(b.N), "srv-writes/op")
	b.ReportMetric(float64(cliWrites.Load())/float64(b.N), "cli-writes/op")
}

// committer releases the requests waiting on it in batches, one every
// commitEvery, as a raft leader's commits do.
type committer struct {
	mu    sync.Mutex
	batch chan struct{}
	done  chan struct{}
}

const commitEvery = 100 * time.Microsecond

func newCommitter() *committer {
	c := &committer{batch: make(chan struct{}), done: make(chan struct{})}
	go func() {
		t := time.NewTicker(commitEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
			case <-c.done:
				return
			}
			c.mu.Lock()
			close(c.batch)
			c.batch = make(chan struct{})
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *committer) wait() {
	c.mu.Lock()
	batch := c.batch
	c.mu.Unlock()
	<-batch
}

func (c *committer) stop() { close(c.done) }
