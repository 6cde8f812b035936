package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// The S67 cases are consul cases, which the tenure profile of
// TestConformance does not run: this test runs them against tenure under
// the consul profile through a streaming proxy (the monitor's answer never
// ends), which must pass, and then through mutants that each break one
// endpoint, each of which must fail them.

// opsMutant rewrites one kind of answer on its way back.
type opsMutant struct {
	name    string
	rewrite func(tokens *tokenLog, resp *http.Response) error
}

// tokenLog keeps the last token query value the proxy saw.
type tokenLog struct {
	mu   sync.Mutex
	last string
}

func opsProxy(t *testing.T, base string, m opsMutant) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	tokens := &tokenLog{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // stream the monitor as it comes
	rp.ModifyResponse = func(resp *http.Response) error {
		if m.rewrite == nil {
			return nil
		}
		return m.rewrite(tokens, resp)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Plain answers, which the mutants can rewrite: a server that
		// compresses (Consul, tenure) would otherwise gzip them for a Go
		// client.
		r.Header.Del("Accept-Encoding")
		if tok := r.URL.Query().Get("token"); tok != "" {
			tokens.mu.Lock()
			tokens.last = tok
			tokens.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// rewriteBody replaces a whole answer's JSON object through f.
func rewriteBody(resp *http.Response, f func(m map[string]any)) error {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		f(m)
		if nb, err := json.Marshal(m); err == nil {
			b = nb
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
	return nil
}

var opsMutants = []opsMutant{
	{"self-without-debug-config", func(_ *tokenLog, resp *http.Response) error {
		if resp.Request.URL.Path != "/v1/agent/self" {
			return nil
		}
		return rewriteBody(resp, func(m map[string]any) { delete(m, "DebugConfig") })
	}},
	{"host-without-collection-time", func(_ *tokenLog, resp *http.Response) error {
		if resp.Request.URL.Path != "/v1/agent/host" {
			return nil
		}
		return rewriteBody(resp, func(m map[string]any) { delete(m, "CollectionTime") })
	}},
	{"metrics-without-runtime-gauges", func(_ *tokenLog, resp *http.Response) error {
		if resp.Request.URL.Path != "/v1/agent/metrics" || resp.Request.URL.RawQuery != "" {
			return nil
		}
		return rewriteBody(resp, func(m map[string]any) {
			gauges, _ := m["Gauges"].([]any)
			kept := []any{}
			for _, g := range gauges {
				if name, _ := g.(map[string]any)["Name"].(string); !strings.Contains(name, ".runtime.") {
					kept = append(kept, g)
				}
			}
			m["Gauges"] = kept
		})
	}},
	{"monitor-shows-the-token", func(tokens *tokenLog, resp *http.Response) error {
		if resp.Request.URL.Path != "/v1/agent/monitor" || resp.StatusCode != http.StatusOK {
			return nil
		}
		pr, pw := io.Pipe()
		body := resp.Body
		go func() {
			sc := bufio.NewScanner(body)
			for sc.Scan() {
				tokens.mu.Lock()
				tok := tokens.last
				tokens.mu.Unlock()
				line := strings.ReplaceAll(sc.Text(), "<hidden>", tok)
				if _, err := io.WriteString(pw, line+"\n"); err != nil {
					break
				}
			}
			body.Close()
			pw.CloseWithError(sc.Err())
		}()
		resp.Body = pr
		return nil
	}},
}

func TestAgentOpsCasesCatchBrokenAgents(t *testing.T) {
	base, profile, _ := serverUnderTest(t)
	if profile != string(Tenure) {
		t.Skipf("needs a tenure server (profile %s); against Consul run the consul profile", profile)
	}
	const filter = "^S67/"
	rep := Run(context.Background(), Options{Addr: opsProxy(t, base, opsMutant{name: "identity"}), Profile: Consul, Filter: filter})
	if !rep.OK() || rep.Passed != len(agentOpsCases()) {
		var b strings.Builder
		_ = rep.WriteTable(&b)
		t.Fatalf("the S67 cases fail through the identity proxy:\n%s", b.String())
	}
	for _, m := range opsMutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			rep := Run(context.Background(), Options{Addr: opsProxy(t, base, m), Profile: Consul, Filter: filter})
			if rep.Failed == 0 {
				t.Fatalf("mutant %s survived %s", m.name, filter)
			}
			for _, c := range rep.Cases {
				if c.Outcome == Fail {
					t.Logf("caught by %s: %s", c.ID, oneLine(c.Reason, 200))
				}
			}
		})
	}
}
