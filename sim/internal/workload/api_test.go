package workload

import (
	"errors"
	"fmt"
	"net/http"
	netrpc "net/rpc"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
	"github.com/tenurekv/tenure/model"
	"github.com/tenurekv/tenure/sim/simnet"
)

// TestOutcomes: a request is not-applied only when it certainly had no
// effect (no connection, no leader took it, or the client agent never sent
// it to a server: its one dial failed, or its pool found the connection
// shut down and could not dial again); other 5xx, among them an agent's
// request cut off after it was sent, stay unknown.
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
		// A client agent's answers when its forward failed, in
		// impl/internal/httpapi's clientagent wording: its one dial was refused,
		// the server's end closed after the send, or every pooled
		// connection was shut down and no new one could be dialed.
		ferr, sent, shutDown := agenttest.ForwardErrors(t, "n1:8300", simnet.ErrRefused)
		// impl/internal/httpapi's writeError keeps a reason to one line.
		agentBody := func(err error) string {
			return strings.ReplaceAll("rpc error: server n1:8300: "+err.Error(), "\n", " ")
		}
		answers := map[string]string{
			"/v1/kv/no-leader":      noLeaderBody,
			"/v1/kv/no-servers":     noServersBody,
			"/v1/kv/agent-dial":     agentBody(ferr),
			"/v1/kv/agent-shutdown": agentBody(shutDown),
			// Forward's answer when both attempts found their connection
			// shut down; a real pool gets there only when the second
			// connection's reader stops before the first send, a race.
			"/v1/kv/agent-shutdown-twice": agentBody(fmt.Errorf("forward to n1:8300: %w", errors.Join(netrpc.ErrShutdown, netrpc.ErrShutdown))),
			"/v1/kv/agent-sent":           agentBody(sent),
			// A server's own forward to the leader failed: the agent had
			// sent the request to that server.
			"/v1/kv/leader-shutdown": "forward to leader n2:8300: " + strings.ReplaceAll(shutDown.Error(), "\n", " "),
			"/v1/kv/lost":            "raft apply: leadership lost (the write may or may not commit)",
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
			"no-leader":            core.OutNotApplied,
			"no-servers":           core.OutNotApplied,
			"agent-dial":           core.OutNotApplied,
			"agent-shutdown":       core.OutNotApplied,
			"agent-shutdown-twice": core.OutNotApplied,
			"agent-sent":           core.OutUnknown,
			"leader-shutdown":      core.OutUnknown,
			"lost":                 core.OutUnknown,
		} {
			c.Servers, c.Agent = []string{"n2"}, 0
			if r := c.Kv(model.KVOp{Verb: model.KVSet, Key: key}); r.Outcome != want {
				t.Errorf("%s: %+v, want %s", key, r, want)
			}
		}
	})
}
