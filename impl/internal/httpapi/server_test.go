package httpapi_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// The handler over the real raft server (a one-node dev server on the wall
// clock): sessions, locks, txn guards and a blocking read woken by a release.
func TestOverRealServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(server.Config{NodeName: "dev-1", HTTPAddr: ln.Addr().String(), Dev: true})
	if err != nil {
		ln.Close()
		t.Fatalf("dev server: %v", err)
	}
	hs := &http.Server{Handler: httpapi.New(srv, httpapi.Options{})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		if err := srv.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	select {
	case <-srv.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("dev server never registered its node")
	}
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = ln.Addr().String()
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kv := c.KV()

	sid, _, err := c.Session().Create(&api.SessionEntry{TTL: "10s", LockDelay: time.Millisecond}, nil)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if se, _, err := c.Session().Info(sid, nil); err != nil || se == nil || se.Node != "dev-1" ||
		se.LockDelay != time.Millisecond || se.NodeChecks[0] != "serfHealth" {
		t.Fatalf("info: %+v %v", se, err)
	}
	if _, _, err := c.Session().Renew(sid, nil); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if ok, _, err := kv.Acquire(&api.KVPair{Key: "lock", Session: sid}, nil); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	p, meta, err := kv.Get("lock", nil)
	if err != nil || p == nil || p.Session != sid || meta.LastIndex != p.ModifyIndex {
		t.Fatalf("get: %+v %+v %v", p, meta, err)
	}
	ok, _, _, err := kv.Txn(api.KVTxnOps{
		{Verb: api.KVCheckSession, Key: "lock", Session: sid},
		{Verb: api.KVSet, Key: "guarded", Value: []byte("x")},
	}, nil)
	if err != nil || !ok {
		t.Fatalf("guarded txn: %v %v", ok, err)
	}
	done := make(chan *api.KVPair, 1)
	go func() {
		p, _, err := kv.Get("lock", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 30 * time.Second})
		if err != nil {
			t.Errorf("blocking get: %v", err)
		}
		done <- p
	}()
	if ok, _, err := kv.Release(&api.KVPair{Key: "lock", Session: sid}, nil); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	select {
	case p := <-done:
		if p == nil || p.Session != "" {
			t.Fatalf("woken get: %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking get never woke")
	}
	if _, err := c.Session().Destroy(sid, nil); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if _, _, err := c.Session().Renew(sid, nil); err != nil {
		t.Fatalf("renew of a destroyed session: %v", err) // api maps the 404 to nil, nil
	}
	r, err := http.Get("http://" + ln.Addr().String() + "/v1/session/renew/" + sid)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET renew: %d", r.StatusCode)
	}
}
