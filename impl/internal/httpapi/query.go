package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"time"

	"github.com/tenurekv/tenure/impl/internal/server"
	"github.com/tenurekv/tenure/model"
)

// consistency is a read's consistency mode (CONSUL.md §7).
type consistency int

const (
	modeDefault    consistency = iota // served by the leader without a quorum round
	modeStale                         // served by any server from its local state
	modeConsistent                    // leader verifies leadership first
)

func (m consistency) String() string {
	switch m {
	case modeStale:
		return "stale"
	case modeConsistent:
		return "consistent"
	}
	return "leader"
}

// queryOpts are the query parameters every Consul read parses.
type queryOpts struct {
	mode     consistency
	maxStale time.Duration // with modeStale: forward if the leader is quieter than this
	index    uint64        // block until the result's index exceeds this; 0 = no blocking
	// key, when set, says the read is of this one KV key, so only its
	// changes can move the answer: the read waits on that key alone where
	// the backend can watch single keys (server.KeyWatcher).
	key  string
	wait time.Duration // as sent; waitTime applies default, cap and jitter
	// filter is ?filter, which only the reads that honour it set (S66):
	// it narrows the answer once the read has resolved, so it never
	// changes the index or when a blocking read returns.
	filter *exprFilter
}

// parseQuery reads ?stale, ?consistent, ?leader, ?max_stale, ?wait and ?index
// in Consul's order and with its error texts.
func parseQuery(v url.Values) (queryOpts, error) {
	var q queryOpts
	_, stale := v["stale"]
	_, consistent := v["consistent"]
	if ms := v.Get("max_stale"); ms != "" {
		d, err := time.ParseDuration(ms)
		if err != nil {
			return q, errorf(http.StatusBadRequest, "Invalid max_stale value %q", ms)
		}
		if d > 0 {
			stale = true
			q.maxStale = d
		}
	}
	if stale && consistent {
		return q, errorf(http.StatusBadRequest, "Cannot specify ?stale with ?consistent, conflicting semantics.")
	}
	switch {
	case stale:
		q.mode = modeStale
	case consistent:
		q.mode = modeConsistent
	}
	if w := v.Get("wait"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil {
			return q, errorf(http.StatusBadRequest, "Invalid wait time")
		}
		q.wait = d
	}
	if i := v.Get("index"); i != "" {
		n, err := strconv.ParseUint(i, 10, 64)
		if err != nil {
			return q, errorf(http.StatusBadRequest, "Invalid index")
		}
		q.index = n
	}
	return q, nil
}

// waitTime is the blocking timeout: ≤0 means the default, above the maximum
// is capped, then the optional jitter of up to wait/16 (Consul's
// RPCQueryTimeout).
func (h *handler) waitTime(w time.Duration) time.Duration {
	if w <= 0 {
		w = defaultQueryTime
	}
	w = min(w, maxQueryTime)
	if h.opts.Jitter != nil {
		if limit := w / jitterFraction; limit > 0 {
			w += min(max(h.opts.Jitter(limit), 0), limit)
		}
	}
	return w
}

// view is one read's answer, computed from one state under Backend.Read.
type view struct {
	// index is the X-Consul-Index value (forced to at least 1 when sent).
	index uint64
	// watch, when watchSet, replaces index in the blocking comparison once
	// the read has blocked: a missing key keeps blocking until it appears
	// or is deleted again, not whenever another key changes (CONSUL.md §7).
	watch    uint64
	watchSet bool
	status   int // 0 means 200
	body     any // JSON answer; nil sends no body
	raw      []byte
	isRaw    bool // ?raw: send raw as text/plain
	// fail, if set, is the answer instead of a body: a read of something
	// missing that Consul answers with an error (a prepared query), which
	// never blocks.
	fail error
	// filtered says ACLs removed records from body (acl.go).
	filtered bool
	// unmasked: filtered was decided for the token the read ran with (a
	// prepared query's own), so the caller's token does not mask it.
	unmasked bool
	// dropped, when set, is what ACLs removed, in body's type, for a read
	// Consul narrows by ?filter before ACLs (a service's checks): the read
	// says it was filtered only if ?filter would have kept one of them.
	dropped any
}

// serveArgRead serves a read of the resource named by the path argument
// (a node, a session), answering 400 with missing when the argument is empty.
func (h *handler) serveArgRead(c *call, missing string, read func(s *model.State) view) error {
	return h.serveArgReadOn(c, missing, nil, read)
}

// serveArgReadOn is serveArgRead for a read that honours ?filter over
// entries of target's element type (S66); a nil target ignores ?filter.
func (h *handler) serveArgReadOn(c *call, missing string, target any, read func(s *model.State) view) error {
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	if c.arg == "" {
		return errorf(http.StatusBadRequest, "%s", missing)
	}
	if target != nil {
		if q.filter, err = h.filterParam(c, target); err != nil {
			return err
		}
	}
	return h.serveRead(c, q, read)
}

// serveRead answers a read: locally when the mode allows, else through the
// leader; blocking if ?index asks for it.
func (h *handler) serveRead(c *call, q queryOpts, read func(s *model.State) view) error {
	if local, err := h.readHere(c, q, nil); err != nil || !local {
		return err
	}
	v, err := h.block(c.r.Context(), q, read)
	if err != nil {
		return err
	}
	if v.fail != nil {
		return v.fail
	}
	if q.filter != nil && v.body != nil {
		// Outside Backend.Read: evaluating an expression over a large
		// answer must not hold up the state's writers.
		if v.body, err = q.filter.apply(v.body); err != nil {
			return err
		}
		if v.filtered && v.dropped != nil {
			kept, err := q.filter.apply(v.dropped)
			if err != nil {
				return err
			}
			v.filtered = reflect.ValueOf(kept).Len() > 0
		}
	}
	h.setMeta(c.w, v.index, q.mode)
	if v.filtered && (v.unmasked || !h.maskFiltered(c)) {
		c.w.Header().Set(filteredHeader, "true")
	}
	switch {
	case v.isRaw:
		hd := c.w.Header()
		hd.Set("Content-Type", "text/plain")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Content-Security-Policy", "sandbox")
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write(v.raw)
		return nil
	case v.body == nil:
		c.w.WriteHeader(max(v.status, http.StatusOK))
		return nil
	}
	return writeJSON(c, max(v.status, http.StatusOK), v.body)
}

// block runs read once, or, with ?index, until the result moves past the
// index or the wait elapses on the backend's clock (S46).
func (h *handler) block(ctx context.Context, q queryOpts, read func(s *model.State) view) (view, error) {
	snapshot := func() (view, error) {
		if q.mode == modeConsistent {
			if err := h.b.VerifyLeader(ctx); err != nil {
				return view{}, h.applyFailure(err)
			}
		}
		var v view
		h.b.Read(func(s *model.State) { v = read(s) })
		return v, nil
	}
	if q.index == 0 {
		return snapshot()
	}
	expired := make(chan struct{})
	timer := h.b.Clock().AfterFunc(h.waitTime(q.wait), func() { close(expired) })
	defer timer.Stop()
	blocked := false
	for {
		// Take the channel before reading, so a change between the read and
		// the select still wakes us.
		changed, stop := h.changes(q.key)
		v, err := snapshot()
		if err != nil {
			stop()
			return v, err
		}
		seen := v.index
		if blocked && v.watchSet {
			seen = v.watch
		}
		if seen > q.index || v.fail != nil {
			stop()
			return v, nil
		}
		blocked = true
		select {
		case <-changed:
			stop()
		case <-expired:
			stop()
			return snapshot()
		case <-ctx.Done():
			stop()
			return v, nil // the client left; nobody reads this answer
		}
	}
}

// changes is the channel a blocked read waits on: key's own, when the read
// is of one key and the backend watches single keys, else every change.
func (h *handler) changes(key string) (<-chan struct{}, func()) {
	if kw, ok := h.b.(server.KeyWatcher); ok && key != "" {
		return kw.WatchKey(key)
	}
	return h.b.Changed(), func() {}
}

// setMeta sets the read headers Consul sets (CONSUL.md §7). The index is never 0,
// which would turn a client's next blocking read into a busy loop.
func (h *handler) setMeta(w http.ResponseWriter, index uint64, mode consistency) {
	hd := w.Header()
	hd.Set("X-Consul-Index", strconv.FormatUint(max(index, 1), 10))
	h.setLeaderMeta(w)
	hd.Set("X-Consul-Effective-Consistency", mode.String())
	hd.Set("X-Consul-Query-Backend", "blocking-query")
}

// setLeaderMeta sets X-Consul-KnownLeader and X-Consul-LastContact (ms).
func (h *handler) setLeaderMeta(w http.ResponseWriter) {
	isLeader, _, known := h.b.Leader()
	hd := w.Header()
	hd.Set("X-Consul-KnownLeader", strconv.FormatBool(isLeader || known))
	hd.Set("X-Consul-LastContact", strconv.FormatInt(max(h.b.LastContact(), 0).Milliseconds(), 10))
}
