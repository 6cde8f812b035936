package rpc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/impl/internal/pipenet"
)

// TestDemuxBoundsSilentConnections: connections that send no protocol byte
// hold at most maxUnclassified slots, after which accepting waits; they
// are closed after classifyTimeout, and then the waiting ones are served.
// Every goroutine ends with Close (the bubble would panic otherwise).
func TestDemuxBoundsSilentConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := pipenet.Listen(8300)
		srv := NewServer(nil)
		srv.SetHandler(echo)
		d := NewDemux(ln, srv, nil, nil, nil)
		defer d.Close()
		var silent []net.Conn
		for range maxUnclassified + 1 {
			c, _ := ln.Dial(context.Background(), "")
			silent = append(silent, c)
		}
		synctest.Wait()
		d.mu.Lock()
		held := len(d.pending)
		d.mu.Unlock()
		if held != maxUnclassified || ln.Waiting() != 1 {
			t.Fatalf("%d unclassified held and %d waiting to be accepted, want %d and 1", held, ln.Waiting(), maxUnclassified)
		}
		// A request sent now waits behind the silent ones.
		p := NewPool(PoolConfig{Dial: ln.Dial})
		answered := make(chan error, 1)
		go func() {
			_, err := p.Forward(context.Background(), "x", &Request{Origin: Origin{Node: "n"}, Method: "GET", URI: "/v1/kv/k"})
			answered <- err
		}()
		synctest.Wait()
		select {
		case err := <-answered:
			t.Fatalf("answered (%v) while every slot was held", err)
		default:
		}
		time.Sleep(classifyTimeout)
		synctest.Wait()
		if err := <-answered; err != nil {
			t.Fatalf("request after the silent connections timed out: %v", err)
		}
		// The first ones timed out; the last was accepted only after them.
		for _, c := range silent[:maxUnclassified] {
			if _, err := c.Write([]byte{protoMux}); err == nil {
				t.Fatal("a silent connection was still open after classifyTimeout")
			}
		}
	})
}

// TestCancelInBubble: inside a synctest bubble (the simulator's), the
// caller giving up ends the handler's context, and
// Close ends a request still in flight; every goroutine either made ends.
func TestCancelInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := pipenet.Listen(8300)
		srv := NewServer(nil)
		ended := make(chan error, 2)
		srv.SetHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			ended <- r.Context().Err()
		}))
		d := NewDemux(ln, srv, nil, nil, nil)
		p := NewPool(PoolConfig{Dial: ln.Dial})
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := p.Forward(ctx, "x", &Request{Method: "GET", URI: "/v1/kv/k?index=3"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Forward gave %v, want the caller's deadline", err)
		}
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("handler context ended with %v", err)
		}
		errc := make(chan error, 1)
		go func() {
			_, err := p.Forward(context.Background(), "x", &Request{Method: "GET", URI: "/v1/kv/k?index=3"})
			errc <- err
		}()
		synctest.Wait()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("handler context at Close ended with %v", err)
		}
		if err := <-errc; err == nil {
			t.Fatal("a request cut off by Close succeeded")
		}
	})
}
