package workload

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simnet"
)

// TestOutcomes: a request is not-applied only when it certainly had no
// effect (no connection, or no leader took it); other 5xx stay unknown.
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
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("acquire") {
				http.Error(w, "raft apply: leadership lost (the write may or may not commit)", http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(noLeaderBody))
		})}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		c := &ApiClient{Name: "c", Rec: core.NewRecorder(), Http: &http.Client{Transport: core.SimTransport(n, "c")}, Timeout: time.Second}
		c.Servers = []string{"n1"} // no listener: the dial is refused
		if r := c.Kv(model.KVOp{Verb: model.KVSet, Key: "k"}); r.Outcome != core.OutNotApplied {
			t.Errorf("refused dial: %+v", r)
		}
		c.Servers, c.Agent = []string{"n2"}, 0
		if r := c.Kv(model.KVOp{Verb: model.KVSet, Key: "k"}); r.Outcome != core.OutNotApplied {
			t.Errorf("no leader: %+v", r)
		}
		c.Agent = 0
		if r := c.Kv(model.KVOp{Verb: model.KVLock, Key: "k", Session: "s"}); r.Outcome != core.OutUnknown {
			t.Errorf("leadership lost: %+v", r)
		}
	})
}
