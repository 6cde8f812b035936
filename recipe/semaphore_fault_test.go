package recipe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// faultHook sees every request of a faultClient first. It answers the
// request itself (answer non-nil), or lets it through to the server and
// then, if after is set, may replace the server's answer.
type faultHook func(r *http.Request) (answer *http.Response, after func(*http.Response) *http.Response)

// faultTransport runs hook, and after, one request at a time, so hooks
// keep their own state without locks; the server is not held up by it.
type faultTransport struct {
	base http.RoundTripper
	mu   *sync.Mutex
	hook faultHook
}

func (f faultTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	ans, after := f.hook(r)
	f.mu.Unlock()
	if ans != nil {
		return ans, nil
	}
	resp, err := f.base.RoundTrip(r)
	if err != nil || after == nil {
		return resp, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return after(resp), nil
}

// faultClient is a Client on the test server whose requests pass hook.
func faultClient(t *testing.T, hook faultHook) *Client {
	t.Helper()
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	cfg := api.DefaultConfig()
	cfg.Address = agenttest.Addr(t)
	cfg.HttpClient = &http.Client{Transport: faultTransport{base: base, mu: &sync.Mutex{}, hook: hook}}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hookLocked runs f holding c's hook lock: a test reads or changes its
// hook's state this way while a Hold's watcher may be sending requests.
func hookLocked(c *Client, f func()) {
	mu := c.cfg.HttpClient.Transport.(faultTransport).mu
	mu.Lock()
	defer mu.Unlock()
	f()
}

// txnOf decodes r's ops if r is a txn, leaving its body readable.
func txnOf(t *testing.T, r *http.Request) api.TxnOps {
	if r.URL.Path != "/v1/txn" {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read txn: %v", err)
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	var ops api.TxnOps
	if err := json.Unmarshal(b, &ops); err != nil {
		t.Errorf("decode txn: %v", err)
	}
	return ops
}

// readTxn decodes a txn answer, leaving its body readable.
func readTxn(t *testing.T, resp *http.Response) api.TxnResponse {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("read txn answer: %v", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	var out api.TxnResponse
	if err := json.Unmarshal(b, &out); err != nil {
		t.Errorf("decode txn answer %q: %v", b, err)
	}
	return out
}

// answer is a response the hook makes up.
func answer(r *http.Request, code int, body string) *http.Response {
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: r}
}

// The kinds of request a semaphore sends, as a hook tells them apart.
func isContenderTake(ops api.TxnOps) bool { return len(ops) == 1 && ops[0].KV.Verb == api.KVLock }
func isAdmission(ops api.TxnOps) bool {
	return len(ops) == 2 && ops[0].KV.Verb == api.KVCheckSession && ops[1].KV.Verb == api.KVCAS
}
func isEnterList(r *http.Request, prefix string) bool {
	return r.Method == "GET" && r.URL.Path == "/v1/kv/"+prefix+"/" && r.URL.Query().Has("recurse") && !r.URL.Query().Has("consistent")
}

// holdersOf reads prefix's .lock record.
func holdersOf(t *testing.T, c *Client, prefix string) (semaphoreRecord, *api.KVPair) {
	t.Helper()
	var rec semaphoreRecord
	p, _, err := c.API.KV().Get(prefix+"/"+SemaphoreKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p != nil && len(p.Value) > 0 {
		if err := json.Unmarshal(p.Value, &rec); err != nil {
			t.Fatal(err)
		}
	}
	return rec, p
}

// TestSemaphoreEnterRetries: a 5xx answer to the contest's listing or to
// the admitting txn is retried and the contender is admitted; a 4xx answer
// to the listing ends Acquire at once.
func TestSemaphoreEnterRetries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func(r *http.Request, ops api.TxnOps, prefix string) bool
		code  int
		admit bool
	}{
		{"list 500", func(r *http.Request, _ api.TxnOps, prefix string) bool { return isEnterList(r, prefix) }, 500, true},
		{"admission 500", func(_ *http.Request, ops api.TxnOps, _ string) bool { return isAdmission(ops) }, 500, true},
		{"list 403", func(r *http.Request, _ api.TxnOps, prefix string) bool { return isEnterList(r, prefix) }, 403, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := uniq("semretry")
			failed := 0
			c := faultClient(t, func(r *http.Request) (*http.Response, func(*http.Response) *http.Response) {
				if failed == 0 && tc.fail(r, txnOf(t, r), prefix) {
					failed++
					return answer(r, tc.code, "scripted failure"), nil
				}
				return nil, nil
			})
			s, err := c.Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 1, Session: shortSession()})
			if err != nil {
				t.Fatal(err)
			}
			slot, err := s.Acquire(context.Background())
			hookLocked(c, func() {
				if failed != 1 {
					t.Errorf("the scripted failure was met %d times, want once", failed)
				}
			})
			if !tc.admit {
				var se api.StatusError
				if !errors.As(err, &se) || se.Code != tc.code {
					t.Fatalf("Acquire = %v, want the %d", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer slot.Release(context.Background())
			if err := slot.Verify(context.Background()); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

// TestSemaphoreContenderRefused: when taking the contender key fails,
// Acquire reports why: the server's reason for a refused txn, "refused" for
// an answer that lacks the key, and it never proceeds as if it held the
// key. Leaving afterwards reads the absent .lock once and stops.
func TestSemaphoreContenderRefused(t *testing.T) {
	admin := testClient(t, nil)
	dead := testSession(t, admin, shortSession())
	if _, err := admin.API.Session().Destroy(dead, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, take string // take: the made-up answer to the take ("" = the server's)
		sessionID  string
		want       string
	}{
		{"destroyed session", "", dead, "take contender key"},
		{"no results", `200 {"Results":[]}`, "", ": refused"},
		{"null entry", `200 {"Results":[{"KV":null}]}`, "", ": refused"},
		{"refused with a stray result", `409 {"Results":[{"KV":{"Key":"x","LockIndex":1}}],"Errors":[{"OpIndex":0,"What":"lock refused here"}]}`, "", ": lock refused here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := uniq("semtake")
			lockReads := 0
			c := faultClient(t, func(r *http.Request) (*http.Response, func(*http.Response) *http.Response) {
				if r.Method == "GET" && r.URL.Path == "/v1/kv/"+prefix+"/"+SemaphoreKey {
					lockReads++
				}
				if tc.take != "" && isContenderTake(txnOf(t, r)) {
					code, body, _ := strings.Cut(tc.take, " ")
					n, _ := strconv.Atoi(code)
					return answer(r, n, body), nil
				}
				return nil, nil
			})
			s, err := c.Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 1, SessionID: tc.sessionID, Session: shortSession()})
			if err != nil {
				t.Fatal(err)
			}
			slot, err := s.Acquire(context.Background())
			if err == nil {
				slot.Release(context.Background())
				t.Fatal("Acquire succeeded without its contender key")
			}
			t.Logf("Acquire: %v", err)
			if !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrSessionGone) {
				t.Errorf("Acquire = %v, want an error saying %q", err, tc.want)
			}
			if tc.sessionID != "" && strings.HasSuffix(err.Error(), ": refused") {
				t.Errorf("Acquire = %v, want the server's reason", err)
			}
			hookLocked(c, func() {
				if lockReads != 1 {
					t.Errorf("leaving read the absent .lock %d times, want once", lockReads)
				}
			})
		})
	}
}

// TestSemaphoreAdmission: how enter reads the answer to its admitting txn.
// AdmitIndex is the ModifyIndex of the write that admitted the slot, even
// when .lock changes again before anything else is read; a success answer
// without the cas's entry is checked by reading .lock back; a failed
// session check ends Acquire with ErrSessionGone and the server's reason,
// without another try.
func TestSemaphoreAdmission(t *testing.T) {
	admin := testClient(t, nil)
	ctx := context.Background()
	t.Run("admit index", func(t *testing.T) {
		prefix := uniq("semadmit")
		var admitted uint64
		touched := false
		c := faultClient(t, func(r *http.Request) (*http.Response, func(*http.Response) *http.Response) {
			if admitted != 0 && !touched && r.URL.Path == "/v1/kv/"+prefix+"/" {
				// Whatever reads the prefix next sees .lock written again
				// after the admitting write: same holders, a byte more (an
				// identical write would be a no-op, S37).
				p, _, err := admin.API.KV().Get(prefix+"/"+SemaphoreKey, nil)
				if err != nil || p == nil {
					t.Errorf("read .lock: %v %v", p, err)
					return nil, nil
				}
				p.Value = append(p.Value, ' ')
				if ok, _, err := admin.API.KV().CAS(p, nil); err != nil || !ok {
					t.Errorf("rewrite .lock: %v %v", ok, err)
				}
				touched = true
				return nil, nil
			}
			if isAdmission(txnOf(t, r)) {
				return nil, func(resp *http.Response) *http.Response {
					if out := readTxn(t, resp); resp.StatusCode == 200 && len(out.Results) == 2 {
						admitted = out.Results[1].KV.ModifyIndex
					}
					return resp
				}
			}
			return nil, nil
		})
		slot := acquireOne(t, c, prefix)
		defer slot.Release(ctx)
		if _, _, err := c.API.KV().List(prefix+"/", nil); err != nil { // rewrites .lock if nothing did yet
			t.Fatal(err)
		}
		_, p := holdersOf(t, admin, prefix)
		hookLocked(c, func() {
			if !touched || admitted == 0 || p.ModifyIndex <= admitted {
				t.Fatalf(".lock at %d after admission at %d: the rewrite did not happen", p.ModifyIndex, admitted)
			}
			if slot.AdmitIndex() != admitted {
				t.Errorf("AdmitIndex %d, want the admitting write's %d", slot.AdmitIndex(), admitted)
			}
		})
	})
	t.Run("success without the entry", func(t *testing.T) {
		prefix := uniq("semodd")
		odd := 0
		c := faultClient(t, func(r *http.Request) (*http.Response, func(*http.Response) *http.Response) {
			if odd == 0 && isAdmission(txnOf(t, r)) {
				odd++
				return nil, func(resp *http.Response) *http.Response {
					if out := readTxn(t, resp); resp.StatusCode != 200 || len(out.Results) != 2 {
						t.Errorf("admission answered %d %+v", resp.StatusCode, out)
					}
					return answer(resp.Request, 200, `{"Results":[{"KV":null}]}`)
				}
			}
			return nil, nil
		})
		slot := acquireOne(t, c, prefix)
		defer slot.Release(ctx)
		rec, p := holdersOf(t, admin, prefix)
		if !rec.Holders[slot.Sequencer().Session] || slot.AdmitIndex() != p.ModifyIndex {
			t.Errorf("admitted at %d; .lock %+v at %d", slot.AdmitIndex(), rec, p.ModifyIndex)
		}
		hookLocked(c, func() {
			if odd != 1 {
				t.Errorf("the odd answer was given %d times, want once", odd)
			}
		})
	})
	t.Run("session check fails", func(t *testing.T) {
		prefix := uniq("semgone")
		tries := 0
		c := faultClient(t, func(r *http.Request) (*http.Response, func(*http.Response) *http.Response) {
			if isAdmission(txnOf(t, r)) {
				if tries++; tries == 1 {
					return answer(r, 409, `{"Errors":[{"OpIndex":0,"What":"failed session check here"}]}`), nil
				}
			}
			return nil, nil
		})
		s, err := c.Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 1, Session: shortSession()})
		if err != nil {
			t.Fatal(err)
		}
		slot, err := s.Acquire(ctx)
		if err == nil {
			slot.Release(ctx)
		}
		hookLocked(c, func() {
			if !errors.Is(err, ErrSessionGone) || !strings.Contains(err.Error(), "failed session check here") || tries != 1 {
				t.Errorf("Acquire = %v after %d admission txns, want ErrSessionGone from the first", err, tries)
			}
		})
	})
}

// TestSemaphoreVerify: Verify passes for an admitted slot, fails with
// ErrStaleSequencer once .lock no longer lists the session, and calls an
// answer without .lock's entry a protocol error, not a stale sequencer.
func TestSemaphoreVerify(t *testing.T) {
	admin := testClient(t, nil)
	ctx := context.Background()
	odd := "" // made-up answer body to Verify's txn, "" = the server's
	c := faultClient(t, func(r *http.Request) (*http.Response, func(*http.Response) *http.Response) {
		if ops := txnOf(t, r); odd != "" && len(ops) > 0 && ops[len(ops)-1].KV.Verb == api.KVGetOrEmpty {
			return answer(r, 200, odd), nil
		}
		return nil, nil
	})
	prefix := uniq("semverify")
	slot := acquireOne(t, c, prefix)
	defer slot.Release(ctx)
	if err := slot.Verify(ctx); err != nil {
		t.Fatalf("Verify of an admitted slot: %v", err)
	}
	guard := `{"KV":{"Key":"k"}}`
	for _, body := range []string{`{"Results":[` + guard + `]}`, `{"Results":[` + guard + `,{"KV":null}]}`} {
		hookLocked(c, func() { odd = body })
		if err := slot.Verify(ctx); err == nil || errors.Is(err, ErrStaleSequencer) {
			t.Errorf("Verify answered %s: %v, want a protocol error", body, err)
		}
	}
	hookLocked(c, func() { odd = "" })
	_, p := holdersOf(t, admin, prefix)
	p.Value = []byte(`{"Limit":1,"Holders":{}}`)
	if ok, _, err := admin.API.KV().CAS(p, nil); err != nil || !ok {
		t.Fatalf("rewrite .lock: %v %v", ok, err)
	}
	var fe *FenceError
	if err := slot.Verify(ctx); !errors.As(err, &fe) || !strings.Contains(fe.What, "not among the holders") {
		t.Errorf("Verify after .lock dropped the session: %v, want a FenceError", err)
	}
}

// TestSemaphoreReleaseAndCleanup: Release takes the session out of Holders
// (leaving the others), also when .lock was emptied meanwhile; Cleanup
// then deletes .lock, and refuses one with foreign flags.
func TestSemaphoreReleaseAndCleanup(t *testing.T) {
	c := testClient(t, nil)
	ctx := context.Background()
	prefix := uniq("semrelease")
	s, err := c.Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 2, Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := a.Sequencer().Session, b.Sequencer().Session
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, _ := holdersOf(t, c, prefix); rec.Holders[sa] || !rec.Holders[sb] || len(rec.Holders) != 1 {
		t.Errorf("Holders after a's release: %v, want b's %s only", rec.Holders, sb)
	}
	if err := s.Cleanup(ctx); !errors.Is(err, ErrInUse) {
		t.Errorf("Cleanup while b holds: %v, want ErrInUse", err)
	}
	// Emptied under b (api.Semaphore reads an empty .lock as no holders).
	_, p := holdersOf(t, c, prefix)
	p.Value = nil
	if ok, _, err := c.API.KV().CAS(p, nil); err != nil || !ok {
		t.Fatalf("empty .lock: %v %v", ok, err)
	}
	if err := b.Release(ctx); err != nil {
		t.Errorf("Release with an empty .lock: %v", err)
	}
	if err := s.Cleanup(ctx); err != nil {
		t.Errorf("Cleanup after all released: %v", err)
	}
	if _, p := holdersOf(t, c, prefix); p != nil {
		t.Errorf(".lock left by Cleanup: %+v", p)
	}
	if err := s.Cleanup(ctx); err != nil {
		t.Errorf("Cleanup without .lock: %v", err)
	}
	if _, err := c.API.KV().Put(&api.KVPair{Key: prefix + "/" + SemaphoreKey, Flags: 7}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Cleanup(ctx); !errors.Is(err, ErrConflict) {
		t.Errorf("Cleanup of a .lock with foreign flags: %v, want ErrConflict", err)
	}
}

// TestSemaphoreLeaveReadsOnce: releasing an uncontended slot reads .lock
// once and writes it once; it does not go round again after its cas landed.
func TestSemaphoreLeaveReadsOnce(t *testing.T) {
	ctx := context.Background()
	prefix := uniq("semleave")
	counting := false
	reads, writes := 0, 0
	c := faultClient(t, func(r *http.Request) (*http.Response, func(*http.Response) *http.Response) {
		if counting && r.URL.Path == "/v1/kv/"+prefix+"/"+SemaphoreKey {
			switch r.Method {
			case "GET":
				reads++
			case "PUT":
				writes++
			}
		}
		return nil, nil
	})
	slot := acquireOne(t, c, prefix)
	hookLocked(c, func() { counting = true })
	if err := slot.Release(ctx); err != nil {
		t.Fatal(err)
	}
	hookLocked(c, func() {
		if reads != 1 || writes != 1 {
			t.Errorf("Release read .lock %d times and wrote it %d times, want once each", reads, writes)
		}
	})
}

// acquireOne makes a one-slot semaphore on prefix and takes its slot.
func acquireOne(t *testing.T, c *Client, prefix string) *Slot {
	t.Helper()
	s, err := c.Semaphore(SemaphoreOptions{Prefix: prefix, Limit: 1, Session: shortSession()})
	if err != nil {
		t.Fatal(err)
	}
	slot, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slot
}
