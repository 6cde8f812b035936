package agentcache

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeAPI stands for the agent's API: every path answers the same
// numbered content with its index, blocking on ?index as Consul's reads
// do. It counts the fetches it answers and can be made to fail.
type fakeAPI struct {
	mu      sync.Mutex
	index   uint64
	changed chan struct{}
	status  int // 0: 200
	fetches map[string]int
	queries []string
	big     bool // answer with a long body
}

func newFake() *fakeAPI {
	return &fakeAPI{index: 10, changed: make(chan struct{}), fetches: map[string]int{}}
}

// bump changes the content (a write on the servers).
func (f *fakeAPI) bump() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeAPI) fail(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = status
	close(f.changed) // a blocked read answers now, with the failure
	f.changed = make(chan struct{})
}

func (f *fakeAPI) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetches[path]
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	min, _ := strconv.ParseUint(q.Get("index"), 10, 64)
	wait, _ := time.ParseDuration(q.Get("wait"))
	if min > 0 && wait <= 0 {
		wait = 5 * time.Minute
	}
	f.mu.Lock()
	f.fetches[r.URL.Path]++
	f.queries = append(f.queries, r.URL.RawQuery)
	var timeout <-chan time.Time
	if min > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for min > 0 && f.index <= min && f.status == 0 {
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			f.mu.Lock()
			min = 0
			continue
		case <-r.Context().Done():
			return
		}
		f.mu.Lock()
	}
	index, status, big := f.index, f.status, f.big
	f.mu.Unlock()
	if status != 0 {
		http.Error(w, "No cluster leader", status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Consul-Index", strconv.FormatUint(index, 10))
	w.Header().Set("X-Consul-Effective-Consistency", "stale")
	body := fmt.Sprintf(`{"path":%q,"index":%d}`, r.URL.Path, index)
	if big {
		body = strings.Repeat("x", 100)
	}
	_, _ = w.Write([]byte(body))
}

// reply is one answer as a client sees it.
type reply struct {
	code              int
	cache, age, index string
	consistency, body string
}

func read(h http.Handler, path string, header ...string) reply {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	hd := rec.Header()
	return reply{rec.Code, hd.Get("X-Cache"), strings.Join(hd.Values("Age"), ","), hd.Get("X-Consul-Index"),
		hd.Get("X-Consul-Effective-Consistency"), strings.TrimSpace(rec.Body.String())}
}

func start(t *testing.T, cfg Config) (*Cache, *fakeAPI) {
	f := newFake()
	cfg.Stagger = func(time.Duration) time.Duration { return 0 }
	c := New(f, cfg)
	t.Cleanup(c.Close)
	return c, f
}

const svc = "/v1/catalog/service/web"

// TestMissThenHit: the first cached read fetches (MISS, no Age), the next
// is answered from memory (HIT, Age 0) with the fetched index; the
// consistency header speaks of the client's read.
func TestMissThenHit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		r := read(c, svc+"?cached")
		if r.code != 200 || r.cache != "MISS" || r.age != "" || r.index != "10" || r.consistency != "leader" {
			t.Fatalf("first read: %+v", r)
		}
		synctest.Wait()
		r = read(c, svc+"?cached&stale")
		if r.code != 200 || r.cache != "HIT" || r.age != "0" || r.index != "10" || r.consistency != "stale" {
			t.Fatalf("second read: %+v", r)
		}
		// One fetch, then the refresh, blocked on the servers.
		if n := f.count("/v1/catalog/service/web"); n != 2 {
			t.Fatalf("%d fetches, want the first and one refresh", n)
		}
		if q := f.queries[1]; !strings.Contains(q, "index=10") || !strings.Contains(q, "stale") || strings.Contains(q, "cached") {
			t.Fatalf("refresh asked %q", q)
		}
	})
}

// TestRefreshKeepsEntriesFresh: a change on the servers reaches the entry
// through its refresh, so the next read is a HIT with the new content.
func TestRefreshKeepsEntriesFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		read(c, svc+"?cached")
		synctest.Wait()
		f.bump()
		synctest.Wait()
		if r := read(c, svc+"?cached"); r.cache != "HIT" || r.index != "11" || !strings.Contains(r.body, `"index":11`) {
			t.Fatalf("read after a change: %+v", r)
		}
	})
}

// TestCachedBlockingRead: ?index older than the entry answers at once
// (HIT); the entry's own index waits for the next change (then MISS), or
// for ?wait (then MISS with the same content).
func TestCachedBlockingRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		read(c, svc+"?cached")
		synctest.Wait()
		if r := read(c, svc+"?cached&index=5"); r.cache != "HIT" || r.index != "10" {
			t.Fatalf("older index: %+v", r)
		}
		start := time.Now()
		if r := read(c, svc+"?cached&index=10&wait=2s"); r.cache != "MISS" || r.index != "10" || time.Since(start) != 2*time.Second {
			t.Fatalf("no change: %+v after %v", r, time.Since(start))
		}
		done := make(chan reply)
		go func() { done <- read(c, svc+"?cached&index=10&wait=1m") }()
		time.Sleep(7 * time.Second)
		f.bump()
		if r := <-done; r.cache != "MISS" || r.index != "11" || r.age != "" {
			t.Fatalf("woken by a change: %+v", r)
		}
		start = time.Now()
		read(c, svc+"?cached&index=11")
		if d := time.Since(start); d != defaultBlock {
			t.Fatalf("a blocking read without ?wait waited %v", d)
		}
	})
}

// TestAgeWhileRefreshFails: while the refresh fails the entry is still
// served, its Age counting from the first failure; retries back off; once
// the servers answer again the Age is back to 0.
func TestAgeWhileRefreshFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		read(c, svc+"?cached")
		synctest.Wait()
		before := f.count(svc)
		f.fail(http.StatusInternalServerError)
		time.Sleep(10 * time.Second)
		if r := read(c, svc+"?cached"); r.cache != "HIT" || r.age != "10" || r.index != "10" {
			t.Fatalf("read while the refresh fails: %+v", r)
		}
		time.Sleep(50 * time.Second)
		// After the refresh that was blocked fails: three more at once,
		// then after 2, 4, 8 and 16 s (no random part here), the next
		// one after 32 more: 7 in the first minute.
		if n := f.count(svc) - before; n != 7 {
			t.Fatalf("%d refreshes in a minute of failures, want 7", n)
		}
		f.fail(0)
		time.Sleep(time.Minute)
		synctest.Wait()
		if r := read(c, svc+"?cached"); r.cache != "HIT" || r.age != "0" {
			t.Fatalf("read after the servers are back: %+v", r)
		}
	})
}

// TestMaxAge: an entry that is not kept fresh ages from its fetch;
// max-age refetches one older than asked, max-age=0 refetches always, and
// neither applies to a kept-fresh entry.
func TestMaxAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		const dcs = "/v1/catalog/datacenters"
		read(c, dcs+"?cached")
		time.Sleep(10 * time.Second)
		if r := read(c, dcs+"?cached"); r.cache != "HIT" || r.age != "10" {
			t.Fatalf("aged read: %+v", r)
		}
		if r := read(c, dcs+"?cached", "Cache-Control", "max-age=20"); r.cache != "HIT" || r.age != "10" {
			t.Fatalf("max-age above the age: %+v", r)
		}
		if r := read(c, dcs+"?cached", "Cache-Control", "max-age=5"); r.cache != "MISS" {
			t.Fatalf("max-age below the age: %+v", r)
		}
		if r := read(c, dcs+"?cached"); r.cache != "HIT" || r.age != "0" {
			t.Fatalf("read after the refetch: %+v", r)
		}
		n := f.count(dcs)
		if r := read(c, dcs+"?cached", "Cache-Control", "max-age=0"); r.cache != "MISS" || f.count(dcs) != n+1 {
			t.Fatalf("max-age=0: %+v, %d fetches", r, f.count(dcs)-n)
		}
		read(c, svc+"?cached")
		synctest.Wait()
		if r := read(c, svc+"?cached", "Cache-Control", "max-age=0"); r.cache != "HIT" {
			t.Fatalf("max-age=0 on a kept-fresh entry: %+v", r)
		}
	})
}

// TestStaleIfError: when a refetch fails, stale-if-error serves the entry
// if it is young enough; otherwise the failure is the answer.
func TestStaleIfError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		const q = "/v1/query/abc/execute"
		read(c, q+"?cached")
		f.fail(http.StatusInternalServerError)
		time.Sleep(10 * time.Second)
		if r := read(c, q+"?cached", "Cache-Control", "max-age=1, stale-if-error=60"); r.code != 200 || r.cache != "HIT" || r.age != "10" {
			t.Fatalf("within stale-if-error: %+v", r)
		}
		if r := read(c, q+"?cached", "Cache-Control", "max-age=1, stale-if-error=5"); r.code != 500 || r.cache != "" {
			t.Fatalf("beyond stale-if-error: %+v", r)
		}
		if r := read(c, q+"?cached", "Cache-Control", "max-age=1"); r.code != 500 || r.body != "No cluster leader" {
			t.Fatalf("without stale-if-error: %+v", r)
		}
	})
}

// TestFailedFirstFetch: a read whose fetch fails answers as the read
// itself would, without X-Cache, and leaves no entry.
func TestFailedFirstFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		f.fail(http.StatusNotFound)
		if r := read(c, svc+"?cached"); r.code != 404 || r.cache != "" || r.body != "No cluster leader" {
			t.Fatalf("failed fetch: %+v", r)
		}
		synctest.Wait()
		if c.Len() != 0 {
			t.Fatalf("%d entries kept after a failed fetch", c.Len())
		}
	})
}

// TestRefusals: Consul's 400s, in its order, whether or not ?cached asks
// for the cache where the header is concerned; nothing is fetched.
func TestRefusals(t *testing.T) {
	c, f := start(t, Config{})
	for _, tc := range []struct {
		path, cc, want string
	}{
		{svc + "?cached&consistent", "", "Cannot specify ?cached with ?consistent, conflicting semantics."},
		{svc + "?cached&stale&consistent", "", "Cannot specify ?stale with ?consistent, conflicting semantics."},
		{svc + "?cached&max_stale=x", "", `Invalid max_stale value "x"`},
		{svc, "max-age=x", "Invalid Cache-Control header."},
		{svc + "?cached", "max-age=1, stale-if-error=soon", "Invalid Cache-Control header."},
		{svc + "?cached&wait=x", "", "Invalid wait time"},
		{svc + "?cached&index=x", "", "Invalid index"},
	} {
		r := read(c, tc.path, "Cache-Control", tc.cc)
		if r.code != 400 || r.body != tc.want {
			t.Errorf("GET %s (Cache-Control %q): %d %q, want 400 %q", tc.path, tc.cc, r.code, r.body, tc.want)
		}
	}
	if n := f.count(svc); n != 0 {
		t.Fatalf("refused reads fetched %d times", n)
	}
}

// TestOnlyCachedReadsAreCached: without ?cached, on other paths, and for
// other methods, the request goes through untouched.
func TestOnlyCachedReadsAreCached(t *testing.T) {
	c, f := start(t, Config{})
	for _, p := range []string{svc, "/v1/kv/a?cached", "/v1/catalog/service/?cached", "/v1/catalog/nodes?cached", "/v1/query/x?cached"} {
		if r := read(c, p); r.cache != "" {
			t.Errorf("GET %s answered by the cache: %+v", p, r)
		}
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, svc+"?cached", nil))
	if rec.Header().Get("X-Cache") != "" || c.Len() != 0 || f.count(svc) != 2 {
		t.Fatalf("a PUT went through the cache: %d entries, %d fetches", c.Len(), f.count(svc))
	}
}

// TestEntryKeys: parameters that shape the answer make entries of their
// own whatever their order; consistency and blocking ones do not.
func TestEntryKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := start(t, Config{})
		for _, p := range []string{"?cached&tag=a&tag=b", "?tag=a&cached&tag=b&stale", "?cached&tag=b", "?cached&tag=a&tag=b&index=1&wait=1s"} {
			read(c, svc+p)
		}
		read(c, svc+"?cached", "X-Consul-Token", "other")
		if n := c.Len(); n != 3 {
			t.Fatalf("%d entries, want 3 (tags a,b; tag b; another token)", n)
		}
	})
}

// TestUnusedEntriesExpire: an entry nobody reads for 72 hours is dropped
// and its refresh stops; one read meanwhile keeps it.
func TestUnusedEntriesExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		read(c, svc+"?cached")
		time.Sleep(70 * time.Hour)
		read(c, svc+"?cached")
		time.Sleep(70 * time.Hour)
		synctest.Wait()
		if c.Len() != 1 {
			t.Fatal("an entry read 70 hours ago was dropped")
		}
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		if c.Len() != 0 {
			t.Fatal("an entry unread for 73 hours is still kept")
		}
		n := f.count(svc)
		time.Sleep(time.Hour)
		if f.count(svc) != n {
			t.Fatal("the dropped entry's refresh goes on")
		}
	})
}

// TestBounds: past MaxEntries the least recently read entry goes; past
// MaxBytes too; an answer longer than MaxEntryBytes is read through and
// not kept.
func TestBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{MaxEntries: 2, MaxBytes: 100, MaxEntryBytes: 60})
		read(c, "/v1/catalog/service/a?cached")
		read(c, "/v1/catalog/service/b?cached")
		read(c, "/v1/catalog/service/a?cached")
		read(c, "/v1/catalog/service/c?cached")
		synctest.Wait()
		if c.Len() != 2 || read(c, "/v1/catalog/service/a?cached").cache != "HIT" {
			t.Fatalf("%d entries; the most recently read should have stayed", c.Len())
		}
		// Each answer here is about 45 bytes: three do not fit in 100.
		read(c, "/v1/health/service/d?cached")
		if c.Len() != 2 {
			t.Fatalf("%d entries over MaxBytes", c.Len())
		}
		f.mu.Lock()
		f.big = true
		f.mu.Unlock()
		if r := read(c, "/v1/catalog/service/e?cached"); r.code != 200 || r.cache != "MISS" || len(r.body) != 100 {
			t.Fatalf("long answer: %+v", r)
		}
		synctest.Wait()
		if r := read(c, "/v1/catalog/service/e?cached"); r.cache != "MISS" {
			t.Fatalf("a long answer was kept: %+v", r)
		}
	})
}

// TestOneFetchServesMany: reads that arrive while a fetch is under way
// wait for it rather than fetch again.
func TestOneFetchServesMany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := start(t, Config{})
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { read(c, "/v1/catalog/datacenters?cached") })
		}
		wg.Wait()
		if n := f.count("/v1/catalog/datacenters"); n != 1 {
			t.Fatalf("%d fetches for 10 reads at once", n)
		}
	})
}

// TestCloseStopsRefreshes: Close ends every refresh under way (the bubble
// fails on a goroutine left behind).
func TestCloseStopsRefreshes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		c := New(f, Config{})
		read(c, svc+"?cached")
		read(c, "/v1/health/service/web?cached")
		synctest.Wait()
		c.Close()
		if r := read(c, svc+"?cached"); r.code != 200 || r.cache != "" {
			t.Fatalf("read after Close: %+v", r)
		}
	})
}
