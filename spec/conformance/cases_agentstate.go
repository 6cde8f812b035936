package conformance

import (
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The agent cache (S76) and the agent service's content hash (S77), as a
// client sees them over HTTP, so that the cases run on real Consul too.
// S75 (registrations kept across a restart) needs the server restarted
// and has no case here.
func agentStateCases() []Case {
	return []Case{
		{clause: "S75", name: "registrations-survive-a-restart",
			unobservable: "needs the agent under test restarted, which a client cannot do; tested in impl/agent (TestServerAgentKeepsRegistrationsAcrossRestarts)"},
		{clause: "S76", name: "cached-reads-miss-then-hit", run: s76CachedMissThenHit},
		{clause: "S76", name: "cached-entries-follow-writes", run: s76CachedFollowsWrites},
		{clause: "S76", name: "cached-refusals", run: s76CachedRefusals},
		{clause: "S77", name: "service-content-hash-blocks", run: s77ContentHash},
	}
}

// getHeaders is a GET with extra request headers.
func (t *caseT) getHeaders(path string, header http.Header) *resp {
	r, err := t.env.doWith(t.ctx, http.MethodGet, path, nil, t.env.withToken(header))
	if err != nil {
		t.Fatalf("%v", err)
	}
	return r
}

// cacheHeaders checks an answer's X-Cache and Age: a MISS has no Age, a
// HIT an Age in whole seconds (age, unless age is "").
func (t *caseT) cacheHeaders(what string, r *resp, want, age string) {
	t.Require(r.Code == http.StatusOK, "%s: want 200, got %s", what, r)
	t.Equal(what+": X-Cache", r.Header.Get("X-Cache"), want)
	switch {
	case want == "MISS":
		t.Check(len(r.Header.Values("Age")) == 0, "%s: a MISS carries Age %q", what, r.Header.Get("Age"))
	case age != "":
		t.Equal(what+": Age", r.Header.Get("Age"), age)
	default:
		t.Check(r.Header.Get("Age") != "", "%s: a HIT without Age", what)
	}
}

// The first ?cached read of a catalog service, a health service and the
// datacenter list is fetched (MISS), the next answered from the cache
// (HIT); a kept-fresh entry's Age is 0. Cache-Control max-age=0 refetches
// the datacenter list but not a kept-fresh entry.
func s76CachedMissThenHit(t *caseT) {
	svc := t.ServiceName("cached")
	for _, path := range []string{"/v1/catalog/service/" + svc, "/v1/health/service/" + svc} {
		first := t.Do(http.MethodGet, path+"?cached", nil)
		t.cacheHeaders("first cached read of "+path, first, "MISS", "")
		t.Check(first.Index() > 0, "first cached read of %s: no X-Consul-Index", path)
		second := t.Do(http.MethodGet, path+"?cached", nil)
		t.cacheHeaders("second cached read of "+path, second, "HIT", "0")
		// The index may have moved meanwhile (other writes, which the
		// refresh follows); the answer of a service nobody has is the same.
		t.Check(second.Index() >= first.Index(), "the cached answer's index went from %d back to %d", first.Index(), second.Index())
		t.Equal("the cached answer", second.Text(), first.Text())
		revalidate := t.getHeaders(path+"?cached", http.Header{"Cache-Control": {"max-age=0"}})
		t.cacheHeaders("max-age=0 on "+path, revalidate, "HIT", "0")
	}
	dcs := "/v1/catalog/datacenters?cached"
	t.Do(http.MethodGet, dcs, nil)
	t.cacheHeaders("second cached read of the datacenters", t.Do(http.MethodGet, dcs, nil), "HIT", "")
	t.cacheHeaders("datacenters with max-age=0", t.getHeaders(dcs, http.Header{"Cache-Control": {"max-age=0"}}), "MISS", "")
}

// A kept-fresh entry follows the catalog without a client's help: a
// cached blocking read from the entry's index returns once the service
// appears (or earlier, with the index moved, when something else moved
// it: it is read again from there), and later cached reads are HITs that
// show the service.
func s76CachedFollowsWrites(t *caseT) {
	name := t.ServiceName("fresh")
	node := t.HomeNode()
	path := "/v1/catalog/service/" + name + "?cached"
	first := t.Do(http.MethodGet, path, nil)
	t.cacheHeaders("first cached read", first, "MISS", "")
	type answer struct {
		r   *resp
		err error
	}
	blocked := make(chan answer, 1)
	read := func(index uint64) {
		r, err := t.env.do(t.ctx, http.MethodGet, path+"&index="+strconv.FormatUint(index, 10)+"&wait=30s", nil)
		blocked <- answer{r, err}
	}
	go read(first.Index())
	t.RegisterService(node, name, name, nil)
	index, deadline := first.Index(), time.After(60*time.Second)
	for {
		var a answer
		select {
		case a = <-blocked:
		case <-deadline:
			t.Fatalf("no cached blocking read showed the new service within a minute")
		}
		t.Require(a.err == nil && a.r.Code == http.StatusOK, "cached blocking read: %v %v", a.r, a.err)
		t.Require(a.r.Index() > index, "a cached blocking read from index %d answered index %d", index, a.r.Index())
		var nodes []struct{ ServiceID string }
		t.decode("cached blocking read", a.r, &nodes)
		if len(nodes) == 1 && nodes[0].ServiceID == name {
			break
		}
		index = a.r.Index()
		go read(index)
	}
	r := t.Do(http.MethodGet, path, nil)
	t.cacheHeaders("cached read after the change", r, "HIT", "0")
	var nodes []struct{ ServiceID string }
	t.decode("cached read after the change", r, &nodes)
	t.Check(len(nodes) == 1, "the cached entry does not show the new service: %s", r)
}

// ?cached with ?consistent, and a malformed Cache-Control, answer 400
// with Consul's texts.
func s76CachedRefusals(t *caseT) {
	svc := "/v1/catalog/service/" + url.PathEscape(t.ServiceName("refused"))
	r := t.Do(http.MethodGet, svc+"?cached&consistent", nil)
	t.Check(r.Code == 400 && r.Text() == "Cannot specify ?cached with ?consistent, conflicting semantics.",
		"?cached&consistent: want 400 and Consul's text, got %s", r)
	r = t.getHeaders(svc+"?cached", http.Header{"Cache-Control": {"max-age=soon"}})
	t.Check(r.Code == 400 && r.Text() == "Invalid Cache-Control header.", "malformed Cache-Control: want 400, got %s", r)
}

// GET /v1/agent/service/<id> names the service's ContentHash in its body
// and in X-Consul-ContentHash; a read with that hash blocks until ?wait
// runs out, and then answers the same hash; one blocked on it returns when
// the registration changes, with a new hash; another hash answers at once.
func s77ContentHash(t *caseT) {
	id := t.RegisterAgentService("hashed", map[string]any{"Port": 1000})
	path := "/v1/agent/service/" + url.PathEscape(id)
	read := func(r *resp) string {
		t.Require(r.Code == http.StatusOK, "GET %s: %s", path, r)
		var s struct{ ContentHash string }
		t.decode("agent service", r, &s)
		h := r.Header.Get("X-Consul-ContentHash")
		t.Require(h != "" && h == s.ContentHash, "X-Consul-ContentHash %q, body ContentHash %q", h, s.ContentHash)
		return h
	}
	hash := read(t.Do(http.MethodGet, path, nil))
	t.Equal("hash of an unchanged service", read(t.Do(http.MethodGet, path, nil)), hash)

	start := time.Now()
	t.Equal("hash after a wait with nothing changed", read(t.Do(http.MethodGet, path+"?hash="+hash+"&wait=1s", nil)), hash)
	t.Check(time.Since(start) >= time.Second, "a read with the current hash answered after %v, before its 1s wait", time.Since(start))

	blocked := make(chan *resp, 1)
	go func() {
		r, err := t.env.do(t.ctx, http.MethodGet, path+"?hash="+hash+"&wait=30s", nil)
		if err != nil {
			r = &resp{Code: -1, Body: []byte(err.Error())}
		}
		blocked <- r
	}()
	t.Sleep(500 * time.Millisecond)
	t.agentPut("/v1/agent/service/register", map[string]any{"ID": id, "Name": id, "Port": 2000})
	var woken *resp
	select {
	case woken = <-blocked:
	case <-time.After(40 * time.Second):
		t.Fatalf("a hash read was not answered within its wait")
	}
	changed := read(woken)
	t.Check(changed != hash, "the read woken by a change answered the old hash %s", hash)
	start = time.Now()
	t.Equal("hash read with another hash", read(t.Do(http.MethodGet, path+"?hash="+hash+"&wait=30s", nil)), changed)
	t.Check(time.Since(start) < 20*time.Second, "a read with another hash blocked %v", time.Since(start))
}
