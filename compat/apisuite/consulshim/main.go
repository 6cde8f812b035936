// Command consulshim stands in for the `consul` binary that consul/api's
// test harness (github.com/hashicorp/consul/sdk/testutil) runs from PATH.
// compat/apisuite builds it as `consul` into a temporary directory put
// first on PATH, and names the real agent binary in APISUITE_AGENT:
// tenure, or a real consul for the side-by-side run.
//
// Every command runs the agent binary with the same arguments; `consul
// version -format=json`, which the harness asks first, is answered by the
// agent itself. For `agent`, the shim may first rewrite the JSON config
// file the harness wrote (always the first -config-file), as named by
// APISUITE_WORKAROUNDS, a comma-separated list:
//
//   - version: drop the "version" key, which testutil writes (the version
//     `consul version` reported) and tenure refuses as an unknown key.
//     Remove once cmd/tenure accepts the key.
//   - bootstrap: replace "bootstrap": true with "bootstrap_expect": 1,
//     which Consul documents as the same thing, because tenure ignores
//     "bootstrap" and so never elects itself. Remove once cmd/tenure
//     honours the key.
//   - connect: turn Connect off ("connect": {"enabled": false}) and
//     answer the harness's wait for a Connect CA root itself. testutil
//     enables Connect and, when it has, polls
//     /v1/agent/connect/ca/roots until a root is there (its config struct
//     decides, not the agent), so on a server without Connect every test
//     on the default config fails before it starts. The shim then listens
//     on the HTTP port the harness chose, starts the agent on another free
//     port, answers that one GET with a placeholder root and passes every
//     other request through (a reverse proxy: hop-by-hop headers aside,
//     as sent). When the harness's config has Connect off already (the
//     Lock tests), the agent serves the harness's port itself. The Connect tests themselves are excluded (see
//     compat/apisuite/excluded.txt), so nothing reads the placeholder.
//     Needed for as long as tenure has no Connect CA.
//
// The shim forwards SIGINT, SIGTERM and SIGABRT to the agent (the harness
// stops it with SIGINT, then SIGABRT) and exits with its status.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// knownWorkarounds are the names APISUITE_WORKAROUNDS may list.
var knownWorkarounds = []string{"version", "bootstrap", "connect"}

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "consulshim:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	agent := os.Getenv("APISUITE_AGENT")
	if agent == "" {
		return 2, errors.New("APISUITE_AGENT must name the agent binary to run (tenure or consul)")
	}
	workarounds, err := parseWorkarounds(os.Getenv("APISUITE_WORKAROUNDS"))
	if err != nil {
		return 2, err
	}
	var front *frontProxy
	if len(args) > 0 && args[0] == "agent" {
		if args, front, err = rewriteAgentArgs(args, workarounds); err != nil {
			return 2, err
		}
	}
	cmd := exec.Command(agent, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	setParentDeathSignal(cmd)
	if front != nil {
		// Listen before the agent starts, so the harness's first poll
		// reaches the shim rather than a closed port.
		if err := front.listen(); err != nil {
			return 1, err
		}
		defer front.close()
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGABRT)
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("start %s: %w", agent, err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	if front != nil {
		go front.serve()
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() >= 0 {
			return exit.ExitCode(), nil
		}
		return 1, fmt.Errorf("agent: %w", err)
	}
	if err != nil {
		return 1, fmt.Errorf("agent: %w", err)
	}
	return 0, nil
}

// parseWorkarounds reads APISUITE_WORKAROUNDS; "" and "none" mean none.
func parseWorkarounds(s string) (map[string]bool, error) {
	out := map[string]bool{}
	if s == "" || s == "none" {
		return out, nil
	}
	for w := range strings.SplitSeq(s, ",") {
		w = strings.TrimSpace(w)
		if !slices.Contains(knownWorkarounds, w) {
			return nil, fmt.Errorf("APISUITE_WORKAROUNDS: unknown workaround %q (known: %s, or none)", w, strings.Join(knownWorkarounds, ", "))
		}
		out[w] = true
	}
	return out, nil
}

// rewriteAgentArgs applies the workarounds to the first -config-file of an
// agent command line, writing the result beside it (the harness removes its
// directory when it stops the agent), and returns the new arguments and,
// for "connect", the proxy to put in front of the agent's HTTP port.
func rewriteAgentArgs(args []string, workarounds map[string]bool) ([]string, *frontProxy, error) {
	if len(workarounds) == 0 {
		return args, nil, nil
	}
	i := slices.IndexFunc(args, func(a string) bool { return a == "-config-file" || a == "--config-file" })
	if i < 0 || i+1 >= len(args) {
		return nil, nil, errors.New("agent: workarounds need the harness's -config-file, and there is none")
	}
	path := args[i+1]
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read harness config: %w", err)
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, nil, fmt.Errorf("harness config %s: %w", path, err)
	}
	front, err := applyWorkarounds(cfg, workarounds)
	if err != nil {
		return nil, nil, fmt.Errorf("harness config %s: %w", path, err)
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("harness config: %w", err)
	}
	rewritten := filepath.Join(filepath.Dir(path), "apisuite-"+filepath.Base(path))
	if err := os.WriteFile(rewritten, out, 0o600); err != nil {
		return nil, nil, fmt.Errorf("write rewritten config: %w", err)
	}
	fmt.Fprintf(os.Stderr, "consulshim: workarounds %s applied: %s\n", strings.Join(sortedKeys(workarounds), ","), out)
	args = slices.Clone(args)
	args[i+1] = rewritten
	return args, front, nil
}

// applyWorkarounds edits a harness config in place.
func applyWorkarounds(cfg map[string]any, workarounds map[string]bool) (*frontProxy, error) {
	if workarounds["version"] {
		delete(cfg, "version")
	}
	if workarounds["bootstrap"] {
		if b, _ := cfg["bootstrap"].(bool); b {
			delete(cfg, "bootstrap")
			if _, set := cfg["bootstrap_expect"]; !set {
				cfg["bootstrap_expect"] = 1
			}
		}
	}
	if !workarounds["connect"] {
		return nil, nil
	}
	connect, _ := cfg["connect"].(map[string]any)
	if on, _ := connect["enabled"].(bool); !on {
		return nil, nil // the harness will not wait for a CA root
	}
	cfg["connect"] = map[string]any{"enabled": false}
	ports, _ := cfg["ports"].(map[string]any)
	outer, ok := ports["http"].(float64)
	if !ok || outer <= 0 {
		return nil, errors.New("connect workaround: the config names no HTTP port")
	}
	if addrs, _ := cfg["addresses"].(map[string]any); addrs != nil {
		if h, _ := addrs["http"].(string); h != "" {
			return nil, fmt.Errorf("connect workaround: HTTP on %q is not supported, only 127.0.0.1", h)
		}
	}
	inner, err := freePort()
	if err != nil {
		return nil, err
	}
	ports["http"] = inner
	return &frontProxy{
		outer: net.JoinHostPort("127.0.0.1", strconv.Itoa(int(outer))),
		inner: net.JoinHostPort("127.0.0.1", strconv.Itoa(inner)),
	}, nil
}

// freePort asks the kernel for an unused loopback port. testutil's own
// ports come from a block outside the ephemeral range, so the two do not
// collide.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// caRootsPath is the endpoint testutil's WaitForActiveCARoot polls.
const caRootsPath = "/v1/agent/connect/ca/roots"

// placeholderRoots satisfies WaitForActiveCARoot, which wants a 200 with
// an ActiveRootID and at least one root; it is not a certificate.
const placeholderRoots = `{"ActiveRootID":"apisuite-placeholder","TrustDomain":"apisuite.placeholder","Roots":[{"ID":"apisuite-placeholder","Name":"placeholder: Connect is off (consulshim)","Active":true}]}`

// frontProxy listens where the harness expects the HTTP API and passes
// requests to the agent, except the CA-roots wait.
type frontProxy struct {
	outer, inner string
	ln           net.Listener
	srv          *http.Server
}

func (f *frontProxy) listen() error {
	ln, err := net.Listen("tcp", f.outer)
	if err != nil {
		return fmt.Errorf("connect workaround: listen on the harness's HTTP address: %w", err)
	}
	f.ln = ln
	target := &url.URL{Scheme: "http", Host: f.inner}
	proxy := &httputil.ReverseProxy{
		// Rewrite (not Director) adds no X-Forwarded-* headers, so the
		// agent sees the request as the client sent it.
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		// Blocking queries and /v1/agent/monitor stream: pass bytes on
		// as they come.
		FlushInterval: -1,
	}
	// No ServeMux: it would redirect paths it cleans (a KV key with "//"),
	// and the agent must see every path as sent.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == caRootsPath {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(placeholderRoots))
			return
		}
		proxy.ServeHTTP(w, r)
	})
	f.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	return nil
}

func (f *frontProxy) serve() {
	if err := f.srv.Serve(f.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "consulshim: front proxy:", err)
	}
}

func (f *frontProxy) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
}
