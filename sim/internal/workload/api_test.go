package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	netrpc "net/rpc"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/sim/internal/core"

	"github.com/tenurekv/tenure/impl/rpc"
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
		// A client agent's answer when its one dial to a server failed:
		// the pool's own error, in impl/httpapi's clientagent wording.
		pool := rpc.NewPool(rpc.PoolConfig{Dial: func(context.Context, string) (net.Conn, error) {
			return nil, simnet.ErrRefused
		}})
		_, ferr := pool.Forward(context.Background(), "n1:8300", &rpc.Request{Method: http.MethodPut, URI: "/v1/kv/k"})
		if ferr == nil {
			t.Fatal("a refused dial forwarded")
		}
		sent, shutDown := pipeForwardErrors(t)
		// impl/httpapi's writeError keeps a reason to one line.
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

// pipeForwardErrors drives real rpc.Pools over in-memory pipes, whose
// far ends read everything and never answer, to the two errors a client
// agent can get after its request reached the pool: sent, when the server's
// end closed while the request waited for its answer; shutDown, when every
// pooled connection had been closed by its server while idle and the dial
// for a fresh one was refused, so nothing was sent. Call it inside a
// synctest bubble: synctest.Wait is how it knows a pipe has gone quiet.
func pipeForwardErrors(t *testing.T) (sent, shutDown error) {
	t.Helper()
	newPool := func() (*rpc.Pool, *[]net.Conn, *atomic.Bool) {
		// Dials run in a Forward's goroutine, each before the test reads
		// peers (after that Forward's answer or a synctest.Wait).
		var peers []net.Conn
		var refuse atomic.Bool
		p := rpc.NewPool(rpc.PoolConfig{Dial: func(context.Context, string) (net.Conn, error) {
			if refuse.Load() {
				return nil, simnet.ErrRefused
			}
			c, s := net.Pipe()
			go func() { _, _ = io.Copy(io.Discard, s) }()
			peers = append(peers, s)
			return c, nil
		}})
		t.Cleanup(func() { _ = p.Close() })
		return p, &peers, &refuse
	}
	req := &rpc.Request{Method: http.MethodPut, URI: "/v1/session/create"}
	forward := func(p *rpc.Pool, ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := p.Forward(ctx, "n1:8300", req)
			done <- err
		}()
		return done
	}

	p, peers, _ := newPool()
	done := forward(p, context.Background())
	synctest.Wait() // written, waiting for the answer
	(*peers)[0].Close()
	if sent = <-done; sent == nil {
		t.Fatal("a request forwarded with no answer")
	}

	// Requests whose callers give up leave their connections pooled;
	// once one is reused without a dial, every slot holds one.
	p, peers, refuse := newPool()
	for i := 0; ; i++ {
		if i == 64 {
			t.Fatal("the pool dials a new connection for every request")
		}
		before := len(*peers)
		ctx, cancel := context.WithCancel(context.Background())
		done := forward(p, ctx)
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled forward: %v", err)
		}
		if len(*peers) == before {
			break
		}
	}
	for _, c := range *peers {
		c.Close()
	}
	synctest.Wait() // each connection's reader has seen its end
	refuse.Store(true)
	if _, shutDown = p.Forward(context.Background(), "n1:8300", req); !errors.Is(shutDown, netrpc.ErrShutdown) {
		t.Fatalf("forward on a shut-down connection: %v", shutDown)
	}
	return sent, shutDown
}
