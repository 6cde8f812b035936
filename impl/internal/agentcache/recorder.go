package agentcache

import (
	"net/http"
	"strconv"
)

// answer is one fetched answer, as the API wrote it.
type answer struct {
	status int
	header http.Header
	body   []byte
	index  uint64 // X-Consul-Index, at least 1
	// noIndex: the answer carried no index (or 0), which a refresh counts
	// as a failed attempt so that it backs off rather than spin.
	noIndex bool
}

func (a *answer) size() int64 { return int64(len(a.body)) }

// write sends a to w with the extra headers set over a's own.
func (a *answer) write(w http.ResponseWriter, extra map[string]string) {
	h := w.Header()
	for k, vs := range a.header {
		h[k] = append([]string(nil), vs...)
	}
	for k, v := range extra {
		h.Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// recorder is the ResponseWriter a fetch runs the API with: it keeps the
// answer, up to limit bytes of body.
type recorder struct {
	header  http.Header
	status  int
	body    []byte
	limit   int
	tooLong bool
}

func newRecorder(limit int) *recorder { return &recorder{header: http.Header{}, limit: limit} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if len(r.body)+len(p) > r.limit {
		r.tooLong = true
		r.body = nil
		return len(p), nil // discarded: the answer is not kept
	}
	if !r.tooLong {
		r.body = append(r.body, p...)
	}
	return len(p), nil
}

// result is the recorded answer; its index is X-Consul-Index, 1 when
// absent or 0 (an answer with no index still blocks the next refresh).
func (r *recorder) result() *answer {
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	h := r.header.Clone()
	for _, k := range []string{"Date", "Content-Length", "X-Cache", "Age"} {
		h.Del(k)
	}
	idx, _ := strconv.ParseUint(r.header.Get("X-Consul-Index"), 10, 64)
	return &answer{status: status, header: h, body: r.body, index: max(idx, 1), noIndex: idx == 0}
}
