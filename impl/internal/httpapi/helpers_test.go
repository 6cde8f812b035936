package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/internal/clocktest"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/httpapitest"
)

// fixture is one server: a test-double backend on a manual clock behind
// the handler on 127.0.0.1, and an official api client pointed at it.
type fixture struct {
	t      *testing.T
	b      *httpapitest.Backend
	clock  *clocktest.Manual // the backend's clock
	srv    *httptest.Server
	client *api.Client
	blocks *blockTracker
}

type fixtureOpt func(*fixtureConfig)

type fixtureConfig struct {
	opts    httpapi.Options
	backend *httpapitest.Backend
}

func withOptions(o httpapi.Options) fixtureOpt { return func(c *fixtureConfig) { c.opts = o } }

// withBackend serves an existing backend (a follower view, say).
func withBackend(b *httpapitest.Backend) fixtureOpt {
	return func(c *fixtureConfig) { c.backend = b }
}

func newFixture(t *testing.T, opts ...fixtureOpt) *fixture {
	t.Helper()
	var cfg fixtureConfig
	for _, o := range opts {
		o(&cfg)
	}
	f := &fixture{t: t, blocks: &blockTracker{inflight: map[string]int{}}}
	f.b = cfg.backend
	if f.b == nil {
		f.clock = clocktest.NewManual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		f.b = httpapitest.New("node-a", f.clock)
	} else {
		f.clock, _ = f.b.Clock().(*clocktest.Manual)
	}
	f.srv = httptest.NewServer(f.blocks.wrap(httpapi.New(f.b, cfg.opts)))
	t.Cleanup(func() {
		// Parked blocking reads end when their connection goes.
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	f.client = f.newClient()
	return f
}

func (f *fixture) newClient() *api.Client {
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = strings.TrimPrefix(f.srv.URL, "http://")
	c, err := api.NewClient(cfg)
	if err != nil {
		f.t.Fatalf("api client: %v", err)
	}
	return c
}

// reply is a raw answer.
type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (r reply) text() string { return string(r.body) }

// do sends a raw request; body nil sends none.
func (f *fixture) do(method, path string, body []byte) reply {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatalf("build %s %s: %v", method, path, err)
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return reply{code: res.StatusCode, header: res.Header, body: b}
}

func (f *fixture) doJSON(method, path string, v any) reply {
	f.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Fatalf("encode %v: %v", v, err)
	}
	return f.do(method, path, b)
}

// want fails unless r has the status and, if body != "", exactly that body.
func want(t *testing.T, what string, r reply, code int, body string) {
	t.Helper()
	if r.code != code || (body != "" && r.text() != body) {
		t.Fatalf("%s: got %d %q, want %d %q", what, r.code, r.text(), code, body)
	}
}

func decode[T any](t *testing.T, r reply) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %q: %v", r.text(), err)
	}
	return v
}

// session creates a session through the api client.
func (f *fixture) session(se *api.SessionEntry) string {
	f.t.Helper()
	id, _, err := f.client.Session().Create(se, nil)
	if err != nil {
		f.t.Fatalf("create session: %v", err)
	}
	return id
}

func (f *fixture) put(key, value string) {
	f.t.Helper()
	if _, err := f.client.KV().Put(&api.KVPair{Key: key, Value: []byte(value)}, nil); err != nil {
		f.t.Fatalf("put %s: %v", key, err)
	}
}

func (f *fixture) acquire(key, sid, value string) bool {
	f.t.Helper()
	ok, _, err := f.client.KV().Acquire(&api.KVPair{Key: key, Session: sid, Value: []byte(value)}, nil)
	if err != nil {
		f.t.Fatalf("acquire %s by %s: %v", key, sid, err)
	}
	return ok
}

func (f *fixture) get(key string) *api.KVPair {
	f.t.Helper()
	p, _, err := f.client.KV().Get(key, nil)
	if err != nil {
		f.t.Fatalf("get %s: %v", key, err)
	}
	return p
}

// eventually polls cond for up to 10s of wall time. It only guards against
// a hang; no test asserts how long anything takes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// blockTracker counts in-flight blocking reads (GETs with a non-zero
// ?index) per path, so a test can wait until a client is parked.
type blockTracker struct {
	mu       sync.Mutex
	inflight map[string]int
}

func (b *blockTracker) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idx := r.URL.Query().Get("index")
		if r.Method != http.MethodGet || idx == "" || idx == "0" {
			h.ServeHTTP(w, r)
			return
		}
		b.mu.Lock()
		b.inflight[r.URL.Path]++
		b.mu.Unlock()
		defer func() {
			b.mu.Lock()
			b.inflight[r.URL.Path]--
			b.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

func (b *blockTracker) count(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inflight[path]
}
