package workload

import (
	"context"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/impl/rpc"
	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simnet"
)

// TestOutcomes: a request is not-applied only when it certainly had no
// effect (no connection, no leader took it, or the client agent's one dial
// to a server failed); other 5xx stay unknown.
func TestOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, err := simnet.New(simnet.Options{Seed: 1, Link: simnet.Link{Latency: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		ln, err := n.Listen("n2:" + core.HttpPort)
		if err != nil {
			t.Fatal(err)
		}
		// A client agent's answer when its one dial to a server failed:
		// the pool's own error, in impl/httpapi's clientagent wording.
		pool := rpc.NewPool(rpc.PoolConfig{Dial: func(context.Context, string) (net.Conn, error) {
			return nil, simnet.ErrRefused
		}})
		_, ferr := pool.Forward(context.Background(), "n1:8300", &rpc.Request{Method: http.MethodPut, URI: "/v1/kv/k"})
		if ferr == nil {
			t.Fatal("a refused dial forwarded")
		}
		answers := map[string]string{
			"/v1/kv/no-leader":   noLeaderBody,
			"/v1/kv/agent-dial":  "rpc error: server n1:8300: " + ferr.Error(),
			"/v1/kv/agent-retry": "rpc error: server n1:8300: forward to n1:8300: connection is shut down dial: dial sim agent1->n1:8300: simnet: connection refused",
			"/v1/kv/lost":        "raft apply: leadership lost (the write may or may not commit)",
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(answers[r.URL.Path]))
		})}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		c := &ApiClient{Name: "c", Rec: core.NewRecorder(), Http: &http.Client{Transport: core.SimTransport(n, "c")}, Timeout: time.Second}
		c.Servers = []string{"n1"} // no listener: the dial is refused
		if r := c.Kv(model.KVOp{Verb: model.KVSet, Key: "k"}); r.Outcome != core.OutNotApplied {
			t.Errorf("refused dial: %+v", r)
		}
		for key, want := range map[string]core.Outcome{
			"no-leader":  core.OutNotApplied,
			"agent-dial": core.OutNotApplied,
			// The first attempt's connection was shut down: whether the
			// request went out on it is not certain.
			"agent-retry": core.OutUnknown,
			"lost":        core.OutUnknown,
		} {
			c.Servers, c.Agent = []string{"n2"}, 0
			if r := c.Kv(model.KVOp{Verb: model.KVSet, Key: key}); r.Outcome != want {
				t.Errorf("%s: %+v, want %s", key, r, want)
			}
		}
	})
}
