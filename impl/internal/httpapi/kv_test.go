package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

func TestKVSetGetListKeys(t *testing.T) {
	f := newFixture(t)
	kv := f.client.KV()
	f.put("app/a", "1")
	f.put("app/b/c", "2")
	f.put("other", "3")
	p := f.get("app/a")
	if p == nil || string(p.Value) != "1" || p.Flags != 0 || p.LockIndex != 0 || p.Session != "" ||
		p.CreateIndex == 0 || p.CreateIndex != p.ModifyIndex {
		t.Fatalf("get app/a: %+v", p)
	}
	// The JSON shape is Consul's DirEntry, Session omitted when empty.
	r := f.do(http.MethodGet, "/v1/kv/app/a", nil)
	want(t, "raw get", r, http.StatusOK, "")
	obj := decode[[]map[string]any](t, r)
	if len(obj) != 1 || slices.Contains(jsonKeys(t, mustRaw(t, r)), "Session") {
		t.Fatalf("get body %s", r.text())
	}
	if got := jsonKeys(t, mustRaw(t, r)); !slices.Equal(got, []string{"LockIndex", "Key", "Flags", "Value", "CreateIndex", "ModifyIndex"}) {
		t.Fatalf("DirEntry keys %v", got)
	}
	if r.header.Get("X-Consul-Index") != strconv.FormatUint(p.ModifyIndex, 10) {
		t.Fatalf("X-Consul-Index %q, want the key's ModifyIndex %d", r.header.Get("X-Consul-Index"), p.ModifyIndex)
	}
	raw := f.do(http.MethodGet, "/v1/kv/app/a?raw", nil)
	want(t, "?raw", raw, http.StatusOK, "1")
	if raw.header.Get("Content-Type") != "text/plain" {
		t.Fatalf("?raw content type %q", raw.header.Get("Content-Type"))
	}
	pairs, _, err := kv.List("app/", nil)
	if err != nil || len(pairs) != 2 || pairs[0].Key != "app/a" || pairs[1].Key != "app/b/c" {
		t.Fatalf("list app/: %+v %v", pairs, err)
	}
	keys, _, err := kv.Keys("app/", "/", nil)
	if err != nil || !slices.Equal(keys, []string{"app/a", "app/b/"}) {
		t.Fatalf("keys app/ sep /: %v %v", keys, err)
	}
	want(t, "keys of nothing", f.do(http.MethodGet, "/v1/kv/zzz?keys", nil), http.StatusNotFound, "")
	want(t, "list of nothing", f.do(http.MethodGet, "/v1/kv/zzz?recurse", nil), http.StatusNotFound, "")
	// An empty body stores an empty value, shown as null.
	f.put("empty", "")
	want(t, "get empty", f.do(http.MethodGet, "/v1/kv/empty", nil), http.StatusOK, "")
	if p := f.get("empty"); p == nil || p.Value != nil {
		t.Fatalf("empty value: %+v", p)
	}
	// A key name with characters that need escaping is stored as decoded.
	want(t, "put escaped", f.do(http.MethodPut, "/v1/kv/sp%20ace/q%3F", []byte("x")), http.StatusOK, "true")
	if p := f.get("sp ace/q?"); p == nil || string(p.Value) != "x" {
		t.Fatalf("escaped key: %+v", p)
	}
}

func mustRaw(t *testing.T, r reply) []byte {
	t.Helper()
	arr := decode[[]jsonRaw](t, r)
	if len(arr) == 0 {
		t.Fatalf("empty array %s", r.text())
	}
	return arr[0]
}

type jsonRaw = json.RawMessage

// A missing key answers 404 with an empty body and index headers (S45).
func TestKVMissingKeyHeaders(t *testing.T) {
	f := newFixture(t)
	r := f.do(http.MethodGet, "/v1/kv/missing", nil)
	want(t, "missing", r, http.StatusNotFound, "")
	// Nothing was ever written to KV: the index is still forced to 1.
	if r.header.Get("X-Consul-Index") != "1" || r.header.Get("X-Consul-KnownLeader") != "true" ||
		r.header.Get("X-Consul-LastContact") != "0" {
		t.Fatalf("missing-key headers %v", r.header)
	}
	f.put("k", "v")
	if _, err := f.client.KV().Delete("k", nil); err != nil {
		t.Fatal(err)
	}
	snap := f.b.Store().Snapshot()
	r = f.do(http.MethodGet, "/v1/kv/k", nil)
	want(t, "deleted", r, http.StatusNotFound, "")
	if r.header.Get("X-Consul-Index") != strconv.FormatUint(snap.Tables().KV, 10) {
		t.Fatalf("deleted key index %q, want the KV table index %d", r.header.Get("X-Consul-Index"), snap.Tables().KV)
	}
}

func TestKVAcquireRelease(t *testing.T) {
	f := newFixture(t)
	kv := f.client.KV()
	s1, s2 := f.session(nil), f.session(nil)
	if !f.acquire("lock", s1, "a") {
		t.Fatal("first acquire refused")
	}
	p := f.get("lock")
	if p.Session != s1 || p.LockIndex != 1 || string(p.Value) != "a" {
		t.Fatalf("after acquire: %+v", p)
	}
	if f.acquire("lock", s2, "b") {
		t.Fatal("acquire of a held key by another session succeeded")
	}
	if !f.acquire("lock", s1, "a2") { // re-acquire by the holder (S28)
		t.Fatal("re-acquire by holder refused")
	}
	if p := f.get("lock"); p.LockIndex != 1 || string(p.Value) != "a2" {
		t.Fatalf("after re-acquire: %+v", p)
	}
	if ok, _, err := kv.Release(&api.KVPair{Key: "lock", Session: s2}, nil); err != nil || ok {
		t.Fatalf("release by non-holder: %v %v", ok, err)
	}
	if ok, _, err := kv.Release(&api.KVPair{Key: "lock", Session: s1, Value: []byte("r")}, nil); err != nil || !ok {
		t.Fatalf("release by holder: %v %v", ok, err)
	}
	if p := f.get("lock"); p.Session != "" || p.LockIndex != 1 || string(p.Value) != "r" {
		t.Fatalf("after release: %+v", p)
	}
	if !f.acquire("lock", s2, "b") {
		t.Fatal("acquire of a released key refused")
	}
	if p := f.get("lock"); p.Session != s2 || p.LockIndex != 2 {
		t.Fatalf("after second holder: %+v", p)
	}
	// Locks are advisory: a plain set on a held key succeeds and keeps the holder (S32, S33).
	f.put("lock", "plain")
	if p := f.get("lock"); p.Session != s2 || p.LockIndex != 2 || string(p.Value) != "plain" {
		t.Fatalf("after plain set: %+v", p)
	}
	// ?flags is stored on acquire too (S38).
	want(t, "acquire with flags", f.do(http.MethodPut, "/v1/kv/lock?acquire="+s2+"&flags=42", nil), http.StatusOK, "true")
	if p := f.get("lock"); p.Flags != 42 || p.Value != nil {
		t.Fatalf("after flagged re-acquire: %+v", p)
	}
}

func TestKVCASAndDelete(t *testing.T) {
	f := newFixture(t)
	kv := f.client.KV()
	cas := func(key, val string, idx uint64) bool {
		t.Helper()
		ok, _, err := kv.CAS(&api.KVPair{Key: key, Value: []byte(val), ModifyIndex: idx}, nil)
		if err != nil {
			t.Fatalf("cas %s@%d: %v", key, idx, err)
		}
		return ok
	}
	if !cas("c", "1", 0) {
		t.Fatal("cas 0 on an absent key refused")
	}
	if cas("c", "2", 0) {
		t.Fatal("cas 0 on an existing key succeeded")
	}
	p := f.get("c")
	if cas("c", "2", p.ModifyIndex+1) {
		t.Fatal("cas with a wrong index succeeded")
	}
	if !cas("c", "2", p.ModifyIndex) {
		t.Fatal("cas with the right index refused")
	}
	if cas("absent", "x", 5) {
		t.Fatal("non-zero cas on an absent key succeeded")
	}
	p = f.get("c")
	if ok, _, _ := kv.DeleteCAS(&api.KVPair{Key: "c", ModifyIndex: p.ModifyIndex - 1}, nil); ok {
		t.Fatal("delete-cas with a stale index succeeded")
	}
	if ok, _, _ := kv.DeleteCAS(&api.KVPair{Key: "c", ModifyIndex: p.ModifyIndex}, nil); !ok {
		t.Fatal("delete-cas with the right index refused")
	}
	if ok, _, _ := kv.DeleteCAS(&api.KVPair{Key: "c", ModifyIndex: 7}, nil); !ok {
		t.Fatal("delete-cas of an absent key answered false")
	}
	// Delete removes a held key; the session lives on (S36).
	sid := f.session(nil)
	f.acquire("t/held", sid, "")
	f.put("t/x", "1")
	want(t, "delete held", f.do(http.MethodDelete, "/v1/kv/t/held", nil), http.StatusOK, "true")
	if se, _, _ := f.client.Session().Info(sid, nil); se == nil {
		t.Fatal("deleting a held key destroyed its session")
	}
	if _, err := kv.DeleteTree("t/", nil); err != nil {
		t.Fatal(err)
	}
	if pairs, _, _ := kv.List("t/", nil); len(pairs) != 0 {
		t.Fatalf("delete-tree left %+v", pairs)
	}
}

// An acquire refused for lock-delay answers false plus the remaining delay,
// and proposes nothing (S22, S25).
func TestKVLockDelayHeader(t *testing.T) {
	f := newFixture(t)
	s1 := f.session(&api.SessionEntry{LockDelay: 10 * time.Second})
	s2 := f.session(nil)
	f.acquire("k", s1, "")
	if _, err := f.client.Session().Destroy(s1, nil); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(4 * time.Second)
	applies := f.b.Store().Applies()
	r := f.do(http.MethodPut, "/v1/kv/k?acquire="+s2, nil)
	want(t, "acquire under lock-delay", r, http.StatusOK, "false")
	if got := r.header.Get("X-Tenure-Lock-Delay"); got != "6s" {
		t.Fatalf("X-Tenure-Lock-Delay %q, want 6s", got)
	}
	if f.b.Store().Applies() != applies {
		t.Fatal("a lock-delay refusal reached the log")
	}
	// Set, cas, delete and release are not blocked (S24).
	f.put("k", "v")
	f.clock.Advance(6 * time.Second)
	r = f.do(http.MethodPut, "/v1/kv/k?acquire="+s2, nil)
	want(t, "acquire after lock-delay", r, http.StatusOK, "true")
	if r.header.Get("X-Tenure-Lock-Delay") != "" {
		t.Fatal("header on a successful acquire")
	}
}

// S64: a successful acquire names the holding period it leaves; a refused
// one, a release and a plain set name none.
func TestKVAcquireNamesItsSequencer(t *testing.T) {
	f := newFixture(t)
	s1, s2 := f.session(nil), f.session(nil)
	check := func(what, path, wantBody string, names bool) {
		t.Helper()
		r := f.do(http.MethodPut, path, nil)
		want(t, what, r, http.StatusOK, wantBody)
		li, mi := r.header.Get("X-Tenure-Lock-Index"), r.header.Get("X-Tenure-Modify-Index")
		if !names {
			if li != "" || mi != "" {
				t.Fatalf("%s: named lock index %q, modify index %q", what, li, mi)
			}
			return
		}
		p := f.get("lock")
		if li != strconv.FormatUint(p.LockIndex, 10) || mi != strconv.FormatUint(p.ModifyIndex, 10) {
			t.Fatalf("%s: named lock index %q, modify index %q; the key is %+v", what, li, mi, p)
		}
	}
	check("acquire", "/v1/kv/lock?acquire="+s1, "true", true)
	check("refused acquire", "/v1/kv/lock?acquire="+s2, "false", false)
	check("re-acquire by the holder", "/v1/kv/lock?acquire="+s1+"&flags=3", "true", true)
	check("release", "/v1/kv/lock?release="+s1, "true", false)
	check("plain set", "/v1/kv/lock", "true", false)
	check("second holder", "/v1/kv/lock?acquire="+s2, "true", true)
}
