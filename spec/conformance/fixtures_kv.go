package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hashicorp/consul/api"
)

// Key returns a key under the case's private prefix; the prefix is deleted
// after the case.
func (t *caseT) Key(name string) string {
	t.mu.Lock()
	first := !t.prefixUsed
	t.prefixUsed = true
	t.mu.Unlock()
	if first {
		prefix := t.prefix
		t.Cleanup(func(ctx context.Context) error {
			r, err := t.env.do(ctx, http.MethodDelete, "/v1/kv/"+prefix+"?recurse", nil)
			if err != nil {
				return err
			}
			if r.Code != 200 {
				return fmt.Errorf("delete prefix %s: %s", prefix, r)
			}
			return nil
		})
	}
	return t.prefix + name
}

// Prefix is the case's private key prefix (ends in "/").
func (t *caseT) Prefix() string { return t.prefix }

// GetRaw reads a key; extra is a query string such as "index=5&wait=1s".
func (t *caseT) GetRaw(key, extra string) *resp {
	p := "/v1/kv/" + key
	if extra != "" {
		p += "?" + extra
	}
	return t.Do(http.MethodGet, p, nil)
}

// Get reads a key: nil when absent (404). The index is X-Consul-Index.
func (t *caseT) Get(key string) (*api.KVPair, uint64) {
	return t.getWith(key, "")
}

func (t *caseT) getWith(key, extra string) (*api.KVPair, uint64) {
	r := t.GetRaw(key, extra)
	switch r.Code {
	case 404:
		return nil, r.Index()
	case 200:
		var ps []*api.KVPair
		t.decode("GET "+key, r, &ps)
		if len(ps) != 1 {
			t.Fatalf("GET %s: want one entry, got %d", key, len(ps))
		}
		return ps[0], r.Index()
	}
	t.Fatalf("GET %s: unexpected answer %s", key, r)
	return nil, 0
}

// MustGet reads a key that must exist.
func (t *caseT) MustGet(key string) *api.KVPair {
	p, _ := t.Get(key)
	if p == nil {
		t.Fatalf("key %s unexpectedly absent", key)
	}
	return p
}

// List reads a prefix recursively: entries (nil on 404) and X-Consul-Index.
func (t *caseT) List(prefix string) ([]*api.KVPair, *resp) {
	r := t.GetRaw(prefix, "recurse")
	switch r.Code {
	case 404:
		return nil, r
	case 200:
		var ps []*api.KVPair
		t.decode("GET "+prefix+"?recurse", r, &ps)
		return ps, r
	}
	t.Fatalf("GET %s?recurse: unexpected answer %s", prefix, r)
	return nil, nil
}

// PutRaw writes a key with the given query (e.g. "acquire=<id>&flags=3").
func (t *caseT) PutRaw(key, value, query string) *resp {
	p := "/v1/kv/" + key
	if query != "" {
		p += "?" + query
	}
	return t.Do(http.MethodPut, p, []byte(value))
}

// PutBool writes a key and returns the boolean answer; anything but a 200
// with true/false stops the case.
func (t *caseT) PutBool(key, value, query string) bool {
	return t.boolAnswer("PUT "+key+"?"+query, t.PutRaw(key, value, query))
}

func (t *caseT) boolAnswer(what string, r *resp) bool {
	if r.Code != 200 {
		t.Fatalf("%s: want 200, got %s", what, r)
	}
	switch r.Text() {
	case "true":
		return true
	case "false":
		return false
	}
	t.Fatalf("%s: want body true or false, got %s", what, r)
	return false
}

// Set is a plain PUT; it must answer true.
func (t *caseT) Set(key, value string) {
	if !t.PutBool(key, value, "") {
		t.Fatalf("plain PUT of %s answered false", key)
	}
}

// Acquire is PUT ?acquire=sid.
func (t *caseT) Acquire(key, sid, value string) bool {
	return t.PutBool(key, value, "acquire="+url.QueryEscape(sid))
}

// Release is PUT ?release=sid.
func (t *caseT) Release(key, sid, value string) bool {
	return t.PutBool(key, value, "release="+url.QueryEscape(sid))
}

// CAS is PUT ?cas=index.
func (t *caseT) CAS(key, value string, index uint64) bool {
	return t.PutBool(key, value, "cas="+strconv.FormatUint(index, 10))
}

// Delete is DELETE with an optional query ("cas=5", "recurse").
func (t *caseT) Delete(key, query string) bool {
	p := "/v1/kv/" + key
	if query != "" {
		p += "?" + query
	}
	return t.boolAnswer("DELETE "+p, t.Do(http.MethodDelete, p, nil))
}

// kvState is the part of a key compared by the "changes nothing" checks.
type kvState struct {
	Value                              string
	Flags, LockIndex, CreateIndex, Mod uint64
	Session                            string
}

func stateOf(p *api.KVPair) *kvState {
	if p == nil {
		return nil
	}
	return &kvState{Value: string(p.Value), Flags: p.Flags, LockIndex: p.LockIndex,
		CreateIndex: p.CreateIndex, Mod: p.ModifyIndex, Session: p.Session}
}

// Unchanged records a failure if key's state differs from before.
func (t *caseT) Unchanged(what, key string, before *api.KVPair) {
	now, _ := t.Get(key)
	t.Equal(what+": state of "+key, stateOf(now), stateOf(before))
}
