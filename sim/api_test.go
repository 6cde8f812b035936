package sim

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

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
		ln, err := n.Listen("n2:" + httpPort)
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
		c := &apiClient{name: "c", rec: newRecorder(), http: &http.Client{Transport: simTransport(n, "c")}, timeout: time.Second}
		c.servers = []string{"n1"} // no listener: the dial is refused
		if r := c.kv(model.KVOp{Verb: model.KVSet, Key: "k"}); r.Outcome != OutNotApplied {
			t.Errorf("refused dial: %+v", r)
		}
		c.servers, c.agent = []string{"n2"}, 0
		if r := c.kv(model.KVOp{Verb: model.KVSet, Key: "k"}); r.Outcome != OutNotApplied {
			t.Errorf("no leader: %+v", r)
		}
		c.agent = 0
		if r := c.kv(model.KVOp{Verb: model.KVLock, Key: "k", Session: "s"}); r.Outcome != OutUnknown {
			t.Errorf("leadership lost: %+v", r)
		}
	})
}
