package recipe

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/consul/api"
)

// maxRawBody bounds what a raw request reads from a response; the answers it
// is used for are a boolean or an error line.
const maxRawBody = 1 << 20

// Client is a consul/api client plus the raw HTTP access that the recipes
// need where api hides response headers (X-Tenure-Lock-Delay, S25).
type Client struct {
	// API is the ordinary consul/api client; use it for anything else.
	API *api.Client
	// Clock drives every wait and timer of the recipes. NewClient sets
	// SystemClock; a simulator replaces it before first use.
	Clock Clock

	cfg api.Config // api.NewClient's view of the config, defaults filled in
	// noSequencerCheck remembers that the server refused check-sequencer
	// (S43) as unknown, so that Fence asks once per client rather than once
	// per write.
	noSequencerCheck atomic.Bool
}

// NewClient builds the api client from cfg and keeps cfg's HTTP client,
// address and token for raw requests, so a simulated transport in
// cfg.HttpClient (or cfg.Transport) carries every request the recipes make.
func NewClient(cfg *api.Config) (*Client, error) {
	if cfg == nil {
		cfg = api.DefaultConfig()
	}
	// api.NewClient fills defaults into *cfg (HttpClient, scheme, path
	// prefix), which is exactly the view raw requests must share.
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("recipe: consul api client: %w", err)
	}
	return &Client{API: c, Clock: SystemClock{}, cfg: *cfg}, nil
}

// rawResponse is what a raw request returns: status, headers and a bounded body.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// raw sends one request the way consul/api would (same address, scheme,
// path prefix, datacenter and token) and returns the whole answer.
func (c *Client) raw(ctx context.Context, method, path string, query url.Values, body []byte) (*rawResponse, error) {
	if query == nil {
		query = url.Values{}
	}
	if c.cfg.Datacenter != "" {
		query.Set("dc", c.cfg.Datacenter)
	}
	if c.cfg.Namespace != "" {
		query.Set("ns", c.cfg.Namespace)
	}
	if c.cfg.Partition != "" {
		query.Set("partition", c.cfg.Partition)
	}
	host := c.cfg.Address
	// A unix-socket address is a path; api dials the socket and names the
	// host "localhost" because Go rejects slashes in Host.
	if strings.HasPrefix(host, "/") {
		host = "localhost"
	}
	u := url.URL{Scheme: c.cfg.Scheme, Host: host, Path: c.cfg.PathPrefix + path, RawQuery: query.Encode()}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("recipe: build %s %s: %w", method, path, err)
	}
	if c.cfg.Token != "" {
		req.Header.Set("X-Consul-Token", c.cfg.Token)
	}
	if c.cfg.HttpAuth != nil {
		req.SetBasicAuth(c.cfg.HttpAuth.Username, c.cfg.HttpAuth.Password)
	}
	resp, err := c.cfg.HttpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("recipe: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRawBody))
	if err != nil {
		return nil, fmt.Errorf("recipe: read %s %s: %w", method, path, err)
	}
	return &rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// kvPath escapes a key for /v1/kv/ the way api does (path segments kept).
func kvPath(key string) string {
	return "/v1/kv/" + strings.TrimPrefix(key, "/")
}
