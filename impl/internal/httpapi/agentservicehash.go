package httpapi

import (
	"github.com/tenurekv/tenure/acl"

	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// GET /v1/agent/service/<id> answers with a ContentHash of the service, in
// the body and in X-Consul-ContentHash, and with ?hash= blocks until the
// service's hash differs from it or ?wait= (default 5 min, at most 10 min,
// plus up to 1/16 of random jitter) runs out, as Consul's agent does
// (CONSUL.md §19). Clients only compare hashes for equality, so tenure
// hashes its own way: FNV-64a over the answer's JSON with the hash left
// out.

// contentHash is the ContentHash of an agent service answer.
func contentHash(s agentServiceJSON) (string, error) {
	s.ContentHash = ""
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("hash service %s: %w", s.ID, err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64()), nil
}

// agentWait reads ?wait and ?index as Consul's parseWait does, with its
// error texts; the index is only validated (the agent's service has no
// index to block on).
func agentWait(c *call) (time.Duration, error) {
	q := c.query()
	var wait time.Duration
	if w := q.Get("wait"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil {
			return 0, errorf(http.StatusBadRequest, "Invalid wait time")
		}
		wait = d
	}
	if i := q.Get("index"); i != "" {
		if _, err := strconv.ParseUint(i, 10, 64); err != nil {
			return 0, errorf(http.StatusBadRequest, "Invalid index")
		}
	}
	return wait, nil
}

// hashWait is how long a ?hash read blocks: the wait asked for, defaulted
// and capped as every blocking read is, plus jitter.
func (h *localHandler) hashWait(w time.Duration) time.Duration {
	if w <= 0 {
		w = defaultQueryTime
	}
	w = min(w, maxQueryTime)
	if limit := w / jitterFraction; limit > 0 {
		w += min(max(h.jitter(limit), 0), limit)
	}
	return w
}

func randomJitter(limit time.Duration) time.Duration { return rand.N(limit) }

// serviceGet is GET /v1/agent/service/<id>[?hash=&wait=].
func (h *localHandler) serviceGet(c *call) error {
	if err := idArg(c, "Service ID"); err != nil {
		return err
	}
	wait, err := agentWait(c)
	if err != nil {
		return err
	}
	want := c.query().Get("hash")
	var expired <-chan time.Time
	if want != "" {
		t := time.NewTimer(h.hashWait(wait))
		defer t.Stop()
		expired = t.C
	}
	st := h.la.State()
	for {
		// Taken before the read, so a change in between still wakes us.
		changed := st.ServicesChanged()
		s, ok := st.Service(c.arg)
		if !ok {
			return errorf(http.StatusNotFound, "unknown service ID: %s", c.arg)
		}
		if err := h.allowed(c, acl.ResourceService, s.Service, acl.AccessRead); err != nil {
			return err // S90
		}
		out := toAgentService(s, h.dc)
		if out.ContentHash, err = contentHash(out); err != nil {
			return err
		}
		if want == "" || out.ContentHash != want {
			return writeHashed(c, out)
		}
		select {
		case <-changed:
		case <-expired:
			return writeHashed(c, out)
		case <-c.r.Context().Done():
			return c.r.Context().Err()
		}
	}
}

func writeHashed(c *call, s agentServiceJSON) error {
	c.w.Header().Set("X-Consul-ContentHash", s.ContentHash)
	return writeJSON(c, http.StatusOK, s)
}
