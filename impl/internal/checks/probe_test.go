package checks

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests use real 127.0.0.1 listeners and processes, so they run
// outside synctest bubbles; none asserts on elapsed time.

func prepared(t *testing.T, d Definition) Definition {
	t.Helper()
	d.Name = "c"
	if d.Interval == 0 {
		d.Interval = time.Second
	}
	p, err := Prepare(d, local, Policy{EnableLocalScriptChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func probe(t *testing.T, d Definition) (string, string) {
	t.Helper()
	p, err := newProber(prepared(t, d), "unix:///nonexistent/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	return p.Probe(context.Background())
}

func TestHTTPProbeStatuses(t *testing.T) {
	code := map[string]int{"/ok": 200, "/created": 201, "/edge": 299, "/redirect": 300, "/busy": 429, "/boom": 500, "/missing": 404}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code[r.URL.Path])
		_, _ = io.WriteString(w, "body of "+r.URL.Path)
	}))
	defer srv.Close()
	for path, want := range map[string]string{"/ok": Passing, "/created": Passing, "/edge": Passing, "/redirect": Critical, "/busy": Warning, "/boom": Critical, "/missing": Critical} {
		st, out := probe(t, Definition{HTTP: srv.URL + path})
		if st != want {
			t.Errorf("%s: status %s, want %s (%s)", path, st, want, out)
		}
		text := http.StatusText(code[path])
		if text == "" { // net/http's status line for a code it has no name for
			text = fmt.Sprintf("status code %d", code[path])
		}
		wantOut := fmt.Sprintf("HTTP GET %s%s: %d %s Output: body of %s", srv.URL, path, code[path], text, path)
		if out != wantOut {
			t.Errorf("%s: output %q", path, out)
		}
	}

	srv.Close()
	st, out := probe(t, Definition{HTTP: srv.URL + "/ok"})
	if st != Critical || !strings.Contains(out, "connect") {
		t.Errorf("a closed server: %s %q", st, out)
	}
	st, _ = probe(t, Definition{HTTP: "::not a url"})
	if st != Critical {
		t.Errorf("a bad URL: %s", st)
	}
}

func TestHTTPProbeSendsTheRequest(t *testing.T) {
	type seen struct {
		method, ua, accept, host, body, custom string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.UserAgent(), r.Header.Get("Accept"), r.Host, string(b), strings.Join(r.Header.Values("X-Custom"), ",")}
	}))
	defer srv.Close()

	probe(t, Definition{HTTP: srv.URL})
	if s := <-got; s.method != "GET" || s.ua != "Consul Health Check" || s.accept != "text/plain, text/*, */*" || s.body != "" {
		t.Errorf("default request: %+v", s)
	}
	probe(t, Definition{HTTP: srv.URL, Method: "POST", Body: `{"a":1}`, Header: map[string][]string{
		"X-Custom": {"1", "2"}, "User-Agent": {"mine"}, "Accept": {"application/json"}, "Host": {"example.test"}}})
	if s := <-got; s.method != "POST" || s.ua != "mine" || s.accept != "application/json" ||
		s.host != "example.test" || s.body != `{"a":1}` || s.custom != "1,2" {
		t.Errorf("configured request: %+v", s)
	}
}

func TestHTTPProbeOutputKeepsTheTail(t *testing.T) {
	body := strings.Repeat("a", 5000) + "THE-END"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	_, out := probe(t, Definition{HTTP: srv.URL, OutputMaxSize: 10})
	if !strings.HasSuffix(out, "Output: aaaTHE-END") {
		t.Fatalf("output %q: want the body's last 10 bytes", out)
	}
}

func TestHTTPProbeTLSAndRedirects(t *testing.T) {
	tsrv := quietTLSServer()
	defer tsrv.Close()
	if st, out := probe(t, Definition{HTTP: tsrv.URL}); st != Critical || !strings.Contains(out, "certificate") {
		t.Errorf("self-signed without TLSSkipVerify: %s %q", st, out)
	}
	if st, out := probe(t, Definition{HTTP: tsrv.URL, TLSSkipVerify: true}); st != Passing {
		t.Errorf("self-signed with TLSSkipVerify: %s %q", st, out)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/from" {
			http.Redirect(w, r, "/to", http.StatusFound)
		}
	}))
	defer srv.Close()
	if st, out := probe(t, Definition{HTTP: srv.URL + "/from"}); st != Passing {
		t.Errorf("redirect followed: %s %q", st, out)
	}
	if st, out := probe(t, Definition{HTTP: srv.URL + "/from", DisableRedirects: true}); st != Critical || !strings.Contains(out, "302") {
		t.Errorf("redirect not followed: %s %q", st, out)
	}
}

// TestHTTPProbeTimeout: a server that never answers makes the probe
// critical once its timeout ends; the handler is released by the test.
func TestHTTPProbeTimeout(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer once.Do(func() { close(release) })
	st, out := probe(t, Definition{HTTP: srv.URL, Timeout: 50 * time.Millisecond})
	once.Do(func() { close(release) })
	if st != Critical || !strings.Contains(out, "Timeout") && !strings.Contains(out, "deadline") {
		t.Fatalf("hung server: %s %q", st, out)
	}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	st, out := probe(t, Definition{TCP: addr})
	if st != Passing || out != "TCP connect "+addr+": Success" {
		t.Errorf("open port: %s %q", st, out)
	}
	_ = ln.Close()
	st, out = probe(t, Definition{TCP: addr})
	if st != Critical || !strings.Contains(out, "refused") {
		t.Errorf("closed port: %s %q", st, out)
	}

	tsrv := quietTLSServer()
	defer tsrv.Close()
	taddr := tsrv.Listener.Addr().String()
	if st, out := probe(t, Definition{TCP: taddr, TCPUseTLS: true}); st != Critical {
		t.Errorf("TLS with an unknown certificate: %s %q", st, out)
	}
	if st, out := probe(t, Definition{TCP: taddr, TCPUseTLS: true, TLSSkipVerify: true}); st != Passing || out != "TCP+TLS connect "+taddr+": Success" {
		t.Errorf("TLS skipping verification: %s %q", st, out)
	}
}

func TestScriptProbe(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	cases := []struct {
		script, status, output string
		max                    int
	}{
		{"echo fine", Passing, "fine\n", 0},
		{"echo meh >&2; exit 1", Warning, "meh\n", 0},
		{"echo bad; exit 2", Critical, "bad\n", 0},
		{"printf 0123456789", Passing, "Captured 4 of 10 bytes\n...\n6789", 4},
	}
	for _, c := range cases {
		st, out := probe(t, Definition{Args: []string{sh, "-c", c.script}, OutputMaxSize: c.max})
		if st != c.status || out != c.output {
			t.Errorf("%q: %s %q, want %s %q", c.script, st, out, c.status, c.output)
		}
	}
	st, out := probe(t, Definition{Args: []string{sh, "-c", "echo started; exec sleep 60"}, Timeout: 100 * time.Millisecond})
	if st != Critical || out != "Timed out (100ms) running check\n\nstarted\n" {
		t.Errorf("timeout: %s %q", st, out)
	}
	st, out = probe(t, Definition{Args: []string{"/nonexistent/tenure-check"}})
	if st != Critical || !strings.Contains(out, "no such file") {
		t.Errorf("missing program: %s %q", st, out)
	}
}

// quietTLSServer is a self-signed HTTPS server that does not log the
// handshakes the tests fail on purpose.
func quietTLSServer() *httptest.Server {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	return s
}

func TestTail(t *testing.T) {
	tl := &tail{max: 4}
	for _, s := range []string{"ab", "cd", "e", "fghij", "k"} {
		_, _ = tl.Write([]byte(s))
	}
	if tl.String() != "hijk" || tl.total != 11 {
		t.Fatalf("tail %q total %d", tl.String(), tl.total)
	}
}

func TestNewProberRefusesTTL(t *testing.T) {
	if _, err := newProber(ttlDef("t", time.Second), defaultDockerHost); err == nil {
		t.Fatal("a TTL check got a prober")
	}
}
