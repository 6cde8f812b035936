package agentcache

import (
	"container/list"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// entry is one cached read.
type entry struct {
	req  request // the read as first asked: every fetch repeats it
	elem *list.Element

	value       *answer // the last good answer; nil until the first
	fetchedAt   time.Time
	lostContact time.Time // set by a failed refresh, cleared by a good one
	failure     *answer   // the last fetch's answer when it failed; nil after a good one
	fetching    bool
	refreshing  bool          // a refresh loop owns the fetches
	done        chan struct{} // closed, and replaced, whenever a fetch ends
	lastRead    time.Time
	expiry      *time.Timer
	gone        chan struct{} // closed when the entry is dropped
	evicted     bool
}

// tooLong is the failure of a fetch whose answer was longer than an entry
// may be: the read goes through instead.
var tooLong = &answer{status: http.StatusOK}

// entryFor returns req's entry, made (and the least recently read dropped
// over MaxEntries) when there is none; nil once the cache is closed.
func (c *Cache) entryFor(req request) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if e := c.entries[req.key]; e != nil {
		return e
	}
	e := &entry{req: req, done: make(chan struct{}), gone: make(chan struct{}), lastRead: time.Now()}
	e.elem = c.lru.PushFront(e)
	c.entries[req.key] = e
	e.expiry = time.AfterFunc(c.cfg.UnusedTTL, func() { c.expire(e) })
	for len(c.entries) > c.cfg.MaxEntries {
		c.evictLocked(c.lru.Back().Value.(*entry))
	}
	return e
}

// touchLocked notes a read of e: it stays, and moves to the front.
func (c *Cache) touchLocked(e *entry) {
	e.lastRead = time.Now()
	if !e.evicted {
		c.lru.MoveToFront(e.elem)
	}
}

// usableLocked says whether e answers req now, as Consul's cache decides
// it, with the answer and its age.
func (c *Cache) usableLocked(e *entry, req request) (*answer, time.Duration, bool) {
	if e.value == nil {
		return nil, 0, false
	}
	if req.kind.refresh && req.minIndex > 0 && req.minIndex >= e.value.index {
		return nil, 0, false // the client has this one: wait for the next
	}
	if !req.kind.refresh {
		if req.cc.maxAge > 0 && time.Since(e.fetchedAt) > req.cc.maxAge {
			return nil, 0, false
		}
		// A fetch under way will answer with what the servers have now;
		// the entry is as fresh as that, as Consul reasons.
		if req.cc.mustRevalidate && !e.fetching {
			return nil, 0, false
		}
	}
	return e.value, c.ageLocked(e), true
}

// ageLocked is e's Age: for a kept-fresh entry, how long its refresh has
// been failing; for another, how long since its fetch.
func (c *Cache) ageLocked(e *entry) time.Duration {
	if e.req.kind.refresh {
		if e.lostContact.IsZero() {
			return 0
		}
		return time.Since(e.lostContact)
	}
	return time.Since(e.fetchedAt)
}

// awaitLocked returns a channel closed when e's next fetch ends, starting
// one unless a fetch or a refresh loop is under way.
func (c *Cache) awaitLocked(e *entry) <-chan struct{} {
	ch := e.done
	if e.fetching || e.refreshing {
		return ch
	}
	e.fetching = true
	c.wg.Add(1)
	go c.fetchOnce(e)
	return ch
}

// fetchOnce fetches e's read and records the answer. The first good answer
// of a kept-fresh read starts its refresh loop; a read whose first fetch
// fails is not kept.
func (c *Cache) fetchOnce(e *entry) {
	defer c.wg.Done()
	a := c.fetch(e.req, 0)
	c.mu.Lock()
	c.recordLocked(e, a)
	if e.value == nil {
		c.evictLocked(e)
	}
	loop := e.req.kind.refresh && !e.evicted && !e.refreshing
	if loop {
		e.refreshing = true
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if loop {
		go c.refreshLoop(e)
	}
}

// recordLocked takes a fetch's answer into e and wakes its readers.
func (c *Cache) recordLocked(e *entry, a *answer) {
	e.fetching = false
	if a != tooLong && a.status == http.StatusOK {
		if !e.evicted {
			if e.value != nil {
				c.bytes -= e.value.size()
			}
			c.bytes += a.size()
		}
		e.value, e.fetchedAt, e.failure, e.lostContact = a, time.Now(), nil, time.Time{}
		for c.bytes > c.cfg.MaxBytes && c.lru.Len() > 1 && c.lru.Back().Value.(*entry) != e {
			c.evictLocked(c.lru.Back().Value.(*entry))
		}
	} else {
		e.failure = a
		if e.req.kind.refresh && e.value != nil && e.lostContact.IsZero() {
			e.lostContact = time.Now()
		}
	}
	close(e.done)
	e.done = make(chan struct{})
}

// refreshLoop keeps a read fresh: a blocking fetch from the entry's index,
// again as soon as it answers, backing off after repeated failures, until
// the entry is dropped or the cache closed.
func (c *Cache) refreshLoop(e *entry) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		e.refreshing, e.fetching = false, false
		close(e.done) // readers still waiting look again, and find it dropped
		e.done = make(chan struct{})
		c.mu.Unlock()
	}()
	failures := 0
	for {
		if wait := c.backoff(failures); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-e.gone:
				t.Stop()
				return
			case <-c.ctx.Done():
				t.Stop()
				return
			}
		}
		c.mu.Lock()
		if e.evicted {
			c.mu.Unlock()
			return
		}
		e.fetching = true
		index, lost := e.value.index, !e.lostContact.IsZero()
		c.mu.Unlock()
		var connected *time.Timer
		if lost {
			// A refresh that stays blocked this long is talking to the
			// servers: the entry is current again.
			connected = time.AfterFunc(connectedAfter, func() {
				c.mu.Lock()
				e.lostContact = time.Time{}
				c.mu.Unlock()
			})
		}
		a := c.fetch(e.req, index)
		if connected != nil {
			connected.Stop()
		}
		if c.ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		c.recordLocked(e, a)
		evicted, failed := e.evicted, e.failure != nil
		c.mu.Unlock()
		if evicted {
			return
		}
		if failed || a.noIndex {
			failures++
		} else {
			failures = 0
		}
	}
}

// backoff is the pause before a refresh after failures in a row:
// none for the first few, then doubling from 2 s up to a minute, plus a
// random part as long again at most.
func (c *Cache) backoff(failures int) time.Duration {
	if failures <= backoffFree {
		return 0
	}
	wait := backoffMax
	if shift := failures - backoffFree; shift < 31 {
		wait = min(time.Duration(1<<shift)*time.Second, backoffMax)
	}
	return wait + c.cfg.Stagger(wait)
}

// fetch runs req through the API as a stale read; with index, as a
// blocking one from it.
func (c *Cache) fetch(req request, index uint64) *answer {
	q := url.Values{}
	for k, vs := range req.query {
		q[k] = vs
	}
	q.Set("stale", "")
	if index > 0 {
		q.Set("index", strconv.FormatUint(index, 10))
		q.Set("wait", c.cfg.RefreshWait.String())
	}
	hr, err := http.NewRequestWithContext(c.ctx, http.MethodGet, req.path+"?"+q.Encode(), nil)
	if err != nil {
		return &answer{status: http.StatusInternalServerError, header: http.Header{},
			body: []byte("agent cache: " + err.Error())}
	}
	if req.token != "" {
		hr.Header.Set("X-Consul-Token", req.token)
	}
	rec := newRecorder(c.cfg.MaxEntryBytes)
	c.next.ServeHTTP(rec, hr)
	if rec.tooLong {
		return tooLong
	}
	return rec.result()
}

// expire drops e once nobody has read it for UnusedTTL.
func (c *Cache) expire(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.evicted {
		return
	}
	if idle := time.Since(e.lastRead); idle < c.cfg.UnusedTTL {
		e.expiry.Reset(c.cfg.UnusedTTL - idle)
		return
	}
	c.evictLocked(e)
}

// evictLocked drops e: its refresh stops, and readers holding it answer
// from what it has.
func (c *Cache) evictLocked(e *entry) {
	if e.evicted {
		return
	}
	e.evicted = true
	delete(c.entries, e.req.key)
	c.lru.Remove(e.elem)
	if e.value != nil {
		c.bytes -= e.value.size()
	}
	e.expiry.Stop()
	close(e.gone)
}
