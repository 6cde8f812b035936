package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/impl/internal/checks"
	"github.com/tenurekv/tenure/impl/internal/httpapi"
	"github.com/tenurekv/tenure/impl/internal/local"
)

// hashAgent is a local agent behind WithLocalAgent, with no jitter, for
// driving in a synctest bubble.
func hashAgent(t *testing.T) (*local.Agent, http.Handler) {
	t.Helper()
	la := local.NewAgent(local.Config{Node: "node-a"}, local.NewMemCatalog())
	t.Cleanup(la.Close)
	h := httpapi.WithLocalAgent(la, http.NotFoundHandler(), httpapi.LocalOptions{
		Jitter: func(time.Duration) time.Duration { return 0 }})
	return la, h
}

func registerSvc(t *testing.T, la *local.Agent, body string) {
	t.Helper()
	def, err := local.DecodeService([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := la.RegisterService(def, checks.Remote, false, ""); err != nil {
		t.Fatal(err)
	}
}

// answer is one answer: status, ContentHash header, body hash, body text.
type answer struct {
	code         int
	header, body string
	text         string
}

func hashGet(h http.Handler, path string) answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var s struct{ ContentHash string }
	_ = json.Unmarshal(rec.Body.Bytes(), &s)
	return answer{rec.Code, rec.Header().Get("X-Consul-ContentHash"), s.ContentHash, strings.TrimSpace(rec.Body.String())}
}

// TestAgentServiceContentHash: the answer carries its ContentHash in the
// body and the header; it stays while the service does and moves when it
// changes; the service list carries none.
func TestAgentServiceContentHash(t *testing.T) {
	la, h := hashAgent(t)
	registerSvc(t, la, `{"ID":"web1","Name":"web","Tags":["a"],"Port":80}`)
	a := hashGet(h, "/v1/agent/service/web1")
	if a.code != 200 || a.header == "" || a.header != a.body {
		t.Fatalf("first read: %+v", a)
	}
	if b := hashGet(h, "/v1/agent/service/web1"); b.header != a.header {
		t.Fatalf("hash moved with nothing changed: %s then %s", a.header, b.header)
	}
	registerSvc(t, la, `{"ID":"web1","Name":"web","Tags":["b"],"Port":80}`)
	if c := hashGet(h, "/v1/agent/service/web1"); c.header == a.header || c.header != c.body {
		t.Fatalf("hash after a change: %+v, before %s", c, a.header)
	}
	if l := hashGet(h, "/v1/agent/services"); strings.Contains(l.text, "ContentHash") {
		t.Fatalf("service list carries a hash: %s", l.text)
	}
}

// TestAgentServiceHashBlocks: with ?hash of the current content a read
// waits until the service changes, or until ?wait runs out and then
// answers the same content; another hash answers at once; a service
// deregistered meanwhile answers 404.
func TestAgentServiceHashBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		la, h := hashAgent(t)
		registerSvc(t, la, `{"ID":"web1","Name":"web","Port":80}`)
		cur := hashGet(h, "/v1/agent/service/web1").header

		start := time.Now()
		if r := hashGet(h, "/v1/agent/service/web1?hash="+cur+"&wait=3s"); r.code != 200 || r.header != cur {
			t.Fatalf("timed-out read: %+v", r)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("read with the current hash answered after %v, want the 3s wait", d)
		}

		start = time.Now()
		if r := hashGet(h, "/v1/agent/service/web1?hash=other&wait=3s"); r.code != 200 || r.header != cur || time.Since(start) != 0 {
			t.Fatalf("read with another hash: %+v after %v", r, time.Since(start))
		}

		// Nothing else about the agent wakes it for good: another service
		// changing makes it look and wait again.
		done := make(chan answer)
		go func() { done <- hashGet(h, "/v1/agent/service/web1?hash="+cur+"&wait=1m") }()
		time.Sleep(5 * time.Second)
		registerSvc(t, la, `{"ID":"other","Name":"other"}`)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case r := <-done:
			t.Fatalf("another service's change ended the wait: %+v", r)
		default:
		}
		registerSvc(t, la, `{"ID":"web1","Name":"web","Port":81}`)
		r := <-done
		if r.code != 200 || r.header == cur || time.Since(start) != 10*time.Second {
			t.Fatalf("read woken by the change: %+v after %v", r, time.Since(start))
		}

		go func() { done <- hashGet(h, "/v1/agent/service/web1?hash="+r.header) }()
		time.Sleep(time.Second)
		if err := la.DeregisterService("web1"); err != nil {
			t.Fatal(err)
		}
		if r := <-done; r.code != 404 || r.text != "unknown service ID: web1" {
			t.Fatalf("read woken by the deregistration: %+v", r)
		}
	})
}

// TestAgentServiceHashDefaultWait: without ?wait a hash read waits
// Consul's default 5 minutes, and ?wait is capped at 10.
func TestAgentServiceHashDefaultWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		la, h := hashAgent(t)
		registerSvc(t, la, `{"ID":"web1","Name":"web"}`)
		cur := hashGet(h, "/v1/agent/service/web1").header
		for _, tc := range []struct {
			query string
			want  time.Duration
		}{{"", 5 * time.Minute}, {"&wait=1h", 10 * time.Minute}} {
			start := time.Now()
			hashGet(h, "/v1/agent/service/web1?hash="+cur+tc.query)
			if d := time.Since(start); d != tc.want {
				t.Errorf("hash read with %q waited %v, want %v", tc.query, d, tc.want)
			}
		}
	})
}

// TestAgentServiceBadWait: ?wait and ?index are parsed as Consul parses
// them, before the service is looked up.
func TestAgentServiceBadWait(t *testing.T) {
	_, h := hashAgent(t)
	for path, want := range map[string]answer{
		"/v1/agent/service/ghost?wait=xx":      {code: 400, text: "Invalid wait time"},
		"/v1/agent/service/ghost?index=x":      {code: 400, text: "Invalid index"},
		"/v1/agent/service/ghost?hash=abc":     {code: 404, text: "unknown service ID: ghost"},
		"/v1/agent/service/ghost?hash=&wait=1": {code: 400, text: "Invalid wait time"},
	} {
		if r := hashGet(h, path); r.code != want.code || r.text != want.text || r.header != "" {
			t.Errorf("GET %s: %+v, want %d %q", path, r, want.code, want.text)
		}
	}
}
