package agentcache

import (
	"container/list"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Consul's settings of its agent cache, not user-settable there either.
const (
	defaultUnusedTTL   = 72 * time.Hour   // LastGetTTL
	defaultRefreshWait = 10 * time.Minute // a refresh's blocking wait (QueryTimeout)
	connectedAfter     = 31 * time.Second // a refresh blocked this long counts as connected
	backoffFree        = 3                // failed refreshes retried at once
	backoffMax         = time.Minute
	defaultBlock       = 5 * time.Minute // a blocking read's wait without ?wait
	maxBlock           = 10 * time.Minute
)

// tenure's bounds.
const (
	defaultMaxEntries    = 1024
	defaultMaxBytes      = 64 << 20
	defaultMaxEntryBytes = 4 << 20
)

// Config configures a Cache; zero values take the defaults above.
type Config struct {
	MaxEntries    int
	MaxBytes      int64
	MaxEntryBytes int
	// UnusedTTL drops an entry nobody has read for this long.
	UnusedTTL time.Duration
	// RefreshWait is how long a background refresh blocks on the servers.
	RefreshWait time.Duration
	// Stagger draws the random part of a refresh's backoff, in [0, d);
	// nil means uniform.
	Stagger func(d time.Duration) time.Duration
	Logger  hclog.Logger
}

// Cache answers `?cached` reads from memory; see the package comment.
type Cache struct {
	next http.Handler
	cfg  Config
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup // fetches and refresh loops

	// mu guards the entries; it is never held across a fetch or a wait.
	mu      sync.Mutex
	entries map[string]*entry
	lru     *list.List // of *entry, most recently read first
	bytes   int64
	closed  bool
}

// New returns a cache in front of next, the agent's API, which also
// answers its fetches. Close stops its background work.
func New(next http.Handler, cfg Config) *Cache {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = defaultMaxEntries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = defaultMaxBytes
	}
	if cfg.MaxEntryBytes <= 0 {
		cfg.MaxEntryBytes = defaultMaxEntryBytes
	}
	if cfg.UnusedTTL <= 0 {
		cfg.UnusedTTL = defaultUnusedTTL
	}
	if cfg.RefreshWait <= 0 {
		cfg.RefreshWait = defaultRefreshWait
	}
	if cfg.Stagger == nil {
		cfg.Stagger = func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return rand.N(d)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Cache{next: next, cfg: cfg, ctx: ctx, stop: stop, entries: map[string]*entry{}, lru: list.New()}
}

// Close stops every refresh and fetch and waits for them; reads still
// under way answer from what they have or go through.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	for _, e := range c.entries {
		c.evictLocked(e)
	}
	c.mu.Unlock()
	c.stop()
	c.wg.Wait()
}

// Len is the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// ServeHTTP answers a cached read, and hands everything else to next.
func (c *Cache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k, ok := kindOf(r.URL.Path)
	if !ok || r.Method != http.MethodGet {
		c.next.ServeHTTP(w, r)
		return
	}
	req, cached, bad := parseRequest(r, k)
	if bad != "" {
		http.Error(w, string(bad), http.StatusBadRequest)
		return
	}
	if !cached {
		c.next.ServeHTTP(w, r)
		return
	}
	c.serve(w, r, req)
}

// serve is Consul's cache read: answer from the entry when it will do,
// otherwise fetch (or wait for the fetch or refresh under way) and look
// again; the first look that finds it good is a HIT, later ones a MISS.
func (c *Cache) serve(w http.ResponseWriter, r *http.Request, req request) {
	e := c.entryFor(req)
	if e == nil {
		// Closed: the read goes through, uncached.
		c.next.ServeHTTP(w, r)
		return
	}
	first, timed := true, false
	var expired <-chan time.Time
	for {
		c.mu.Lock()
		c.touchLocked(e)
		if a, age, ok := c.usableLocked(e, req); ok {
			c.mu.Unlock()
			c.reply(w, req, a, first, age)
			return
		}
		if !first && e.failure != nil {
			a, age, stale := e.value, c.ageLocked(e), e.failure
			c.mu.Unlock()
			if a != nil && req.cc.staleIfError > 0 && age <= req.cc.staleIfError {
				c.reply(w, req, a, true, age)
				return
			}
			c.passThrough(w, r, stale)
			return
		}
		if e.evicted && !e.fetching {
			// Dropped while this read waited (its refresh has stopped):
			// answer with what it has, or read through.
			a := e.value
			c.mu.Unlock()
			if a != nil {
				c.reply(w, req, a, false, 0)
			} else {
				c.next.ServeHTTP(w, r)
			}
			return
		}
		wake := c.awaitLocked(e)
		c.mu.Unlock()
		first = false
		req.cc.mustRevalidate = false
		if !timed && req.kind.refresh && req.minIndex > 0 {
			timed = true
			t := time.NewTimer(blockFor(req.wait))
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-wake:
		case <-expired:
			c.mu.Lock()
			a := e.value
			c.mu.Unlock()
			if a != nil {
				c.reply(w, req, a, false, 0)
				return
			}
			expired = nil // nothing to answer yet: wait for the fetch
		case <-r.Context().Done():
			return
		}
	}
}

// blockFor is a blocking read's wait: ?wait, defaulted and capped as
// every blocking read's.
func blockFor(w time.Duration) time.Duration {
	if w <= 0 {
		return defaultBlock
	}
	return min(w, maxBlock)
}

// reply sends a cached answer with X-Cache (and Age on a hit). The
// consistency header speaks of the read the client asked for, not of the
// cache's stale fetch, as Consul's does.
func (c *Cache) reply(w http.ResponseWriter, req request, a *answer, hit bool, age time.Duration) {
	extra := map[string]string{"X-Cache": "MISS"}
	if hit {
		extra["X-Cache"] = "HIT"
		extra["Age"] = fmt.Sprintf("%.0f", age.Seconds())
	}
	if a.header.Get("X-Consul-Effective-Consistency") != "" {
		extra["X-Consul-Effective-Consistency"] = "leader"
		if req.stale {
			extra["X-Consul-Effective-Consistency"] = "stale"
		}
	}
	a.write(w, extra)
}

// passThrough answers with a failed fetch as the read itself would have
// answered, or, when the answer was too long to keep, by the read itself.
func (c *Cache) passThrough(w http.ResponseWriter, r *http.Request, f *answer) {
	if f == tooLong {
		w.Header().Set("X-Cache", "MISS")
		c.next.ServeHTTP(w, r)
		return
	}
	f.write(w, nil)
}
