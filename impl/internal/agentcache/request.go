package agentcache

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tenurekv/tenure/impl/internal/rpc"
)

// kind is one of the reads the cache takes.
type kind struct {
	name string
	// refresh: the entry is kept fresh by background blocking queries,
	// and reads may block on it with ?index.
	refresh bool
}

var (
	catalogService  = kind{name: "catalog-services", refresh: true}
	healthService   = kind{name: "health-services", refresh: true}
	catalogServices = kind{name: "catalog-list-services", refresh: true}
	datacenters     = kind{name: "catalog-datacenters"}
	preparedQuery   = kind{name: "prepared-query"}
)

// kindOf is the kind of read at path, if the cache takes it.
func kindOf(path string) (kind, bool) {
	switch {
	case path == "/v1/catalog/services":
		return catalogServices, true
	case path == "/v1/catalog/datacenters":
		return datacenters, true
	case strings.HasPrefix(path, "/v1/catalog/service/") && len(path) > len("/v1/catalog/service/"):
		return catalogService, true
	case strings.HasPrefix(path, "/v1/health/service/") && len(path) > len("/v1/health/service/"):
		return healthService, true
	case strings.HasPrefix(path, "/v1/query/") && strings.HasSuffix(path, "/execute") &&
		len(path) > len("/v1/query//execute"):
		return preparedQuery, true
	}
	return kind{}, false
}

// cacheControl is what a request's Cache-Control header asks of the cache.
type cacheControl struct {
	maxAge         time.Duration // 0: any age
	mustRevalidate bool
	staleIfError   time.Duration
}

// parseCacheControl reads the directives Consul reads; a malformed number
// is an error, unknown directives are ignored.
func parseCacheControl(raw string) (cacheControl, bool) {
	var cc cacheControl
	if raw == "" {
		return cc, true
	}
	seconds := func(v string) (time.Duration, bool) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	for _, d := range strings.Split(strings.ToLower(raw), ",") {
		d = strings.TrimSpace(d)
		var ok bool
		switch {
		case d == "must-revalidate":
			cc.mustRevalidate = true
		case strings.HasPrefix(d, "max-age="):
			if cc.maxAge, ok = seconds(d[len("max-age="):]); !ok {
				return cc, false
			}
			if cc.maxAge == 0 {
				// max-age=0 is "stale at once", which an unset max-age
				// cannot say.
				cc.mustRevalidate = true
			}
		case strings.HasPrefix(d, "stale-if-error="):
			if cc.staleIfError, ok = seconds(d[len("stale-if-error="):]); !ok {
				return cc, false
			}
		}
	}
	return cc, true
}

// request is a cached read as the cache sees it.
type request struct {
	kind     kind
	key      string // the entry: kind, token and the answer-shaping query
	path     string
	query    url.Values // the answer-shaping parameters, sent with every fetch
	token    string
	stale    bool // the client asked for ?stale (or a max_stale)
	minIndex uint64
	wait     time.Duration
	cc       cacheControl
}

// notKey are the parameters that do not change the answer: how to read,
// how to block, and the cache's own; and the token, kept apart.
var notKey = map[string]bool{"cached": true, "stale": true, "consistent": true, "leader": true, "max_stale": true,
	"index": true, "wait": true, "token": true}

// refusal is a 400 with Consul's text.
type refusal string

// parseRequest checks a read on a cached path as Consul's parse does, in
// its order (consistency, Cache-Control, wait and index), and tells
// whether the cache serves it (with ?cached).
func parseRequest(r *http.Request, k kind) (req request, cached bool, bad refusal) {
	q := r.URL.Query()
	_, stale := q["stale"]
	_, consistent := q["consistent"]
	_, cached = q["cached"]
	if ms := q.Get("max_stale"); ms != "" {
		d, err := time.ParseDuration(ms)
		if err != nil {
			return req, false, refusal("Invalid max_stale value " + strconv.Quote(ms))
		}
		stale = stale || d > 0
	}
	switch {
	case stale && consistent:
		return req, false, "Cannot specify ?stale with ?consistent, conflicting semantics."
	case cached && consistent:
		return req, false, "Cannot specify ?cached with ?consistent, conflicting semantics."
	}
	cc, ok := parseCacheControl(r.Header.Get("Cache-Control"))
	if !ok {
		return req, false, "Invalid Cache-Control header."
	}
	req = request{kind: k, path: r.URL.Path, stale: stale, cc: cc, token: rpc.RequestToken(r)}
	if w := q.Get("wait"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil {
			return req, false, "Invalid wait time"
		}
		req.wait = d
	}
	if i := q.Get("index"); i != "" {
		n, err := strconv.ParseUint(i, 10, 64)
		if err != nil {
			return req, false, "Invalid index"
		}
		req.minIndex = n
	}
	req.query = url.Values{}
	for name, vs := range q {
		if !notKey[name] {
			req.query[name] = vs
		}
	}
	// Encode sorts by name: one read, one key, whatever the order asked.
	req.key = k.name + "\x00" + req.token + "\x00" + req.path + "?" + req.query.Encode()
	return req, cached, ""
}
