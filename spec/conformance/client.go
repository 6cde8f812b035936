package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// env is the server under test, shared by all cases of a run.
type env struct {
	base  *url.URL
	token string
	http  *http.Client
	api   *api.Client // for the client recipes (lock, semaphore)
	runID string      // makes every key prefix and node name of the run unique
	// reapWait is Options.ReapWait.
	reapWait time.Duration
	// agentBin is Options.Agent.
	agentBin string
}

func newEnv(addr, token string) (*env, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr // host:port, as consul's own CLI accepts
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, &usageError{msg: fmt.Sprintf("bad -addr %q: %v", addr, err)}
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &usageError{msg: fmt.Sprintf("bad -addr %q: want http://host:port", addr)}
	}
	var rid [4]byte
	if _, err := rand.Read(rid[:]); err != nil {
		return nil, fmt.Errorf("make run id: %w", err)
	}
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = u.Host
	cfg.Scheme = u.Scheme
	cfg.Token = token
	ac, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("consul api client for %s: %w", addr, err)
	}
	return &env{
		base:  u,
		token: token,
		// Blocking reads set their own deadline through the context.
		http:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		api:   ac,
		runID: hex.EncodeToString(rid[:]),
	}, nil
}

// resp is a raw HTTP answer.
type resp struct {
	Code   int
	Header http.Header
	Body   []byte
}

// Index is the X-Consul-Index header, 0 if absent or unparseable.
func (r *resp) Index() uint64 {
	var n uint64
	if _, err := fmt.Sscan(r.Header.Get("X-Consul-Index"), &n); err != nil {
		return 0
	}
	return n
}

// Text is the body with surrounding whitespace removed.
func (r *resp) Text() string { return strings.TrimSpace(string(r.Body)) }

func (r *resp) String() string { return fmt.Sprintf("%d %q", r.Code, oneLine(string(r.Body), 300)) }

// do sends one request. path is relative to the base URL and may carry a
// query; body nil sends no body.
func (e *env) do(ctx context.Context, method, path string, body []byte) (*resp, error) {
	return e.doWith(ctx, method, path, body, e.withToken(nil))
}

// withToken is header with the run's token added (X-Consul-Token), if the
// run has one.
func (e *env) withToken(header http.Header) http.Header {
	if e.token == "" {
		return header
	}
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("X-Consul-Token", e.token)
	return h
}

// doWith is do with exactly the given headers (and no token but theirs).
func (e *env) doWith(ctx context.Context, method, path string, body []byte, header http.Header) (*resp, error) {
	req, err := e.request(ctx, method, path, body, header)
	if err != nil {
		return nil, err
	}
	res, err := e.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return &resp{Code: res.StatusCode, Header: res.Header, Body: b}, nil
}

// request builds a request for path (with its query) on the server, with
// exactly the given headers.
func (e *env) request(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Request, error) {
	u := *e.base
	rel, err := url.Parse(path)
	if err != nil {
		return nil, fmt.Errorf("bad request path %q: %w", path, err)
	}
	u.Path = strings.TrimSuffix(e.base.Path, "/") + rel.Path
	u.RawPath = ""
	if rel.RawPath != "" {
		u.RawPath = strings.TrimSuffix(e.base.Path, "/") + rel.RawPath
	}
	u.RawQuery = rel.RawQuery
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	return req, nil
}

// preflight checks that something answers HTTP at the address, using a read
// of a key that cannot exist (any status will do).
func (e *env) preflight(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := e.do(ctx, http.MethodGet, "/v1/kv/conformance/"+e.runID+"/preflight", nil); err != nil {
		return fmt.Errorf("cannot reach server at %s: %w", e.base, err)
	}
	return nil
}
