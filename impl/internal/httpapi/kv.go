package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/leader"
	"github.com/tenurekv/tenure/model"
)

// lockDelayHeader tells a client refused for lock-delay how long the delay
// still runs on the leader's clock (S25).
const lockDelayHeader = "X-Tenure-Lock-Delay"

// A successful acquire names the holding period it leaves (S64), so a
// client has its sequencer without reading the key back.
const (
	lockIndexHeader   = "X-Tenure-Lock-Index"
	modifyIndexHeader = "X-Tenure-Modify-Index"
)

// kvDocURL is where Consul's 413 text points.
const kvDocURL = "https://developer.hashicorp.com/docs/agent/config/config-files#kv_max_value_size"

// kv is /v1/kv/<key>. Like Consul, it parses the read options for every
// method, so ?stale&consistent or a bad ?index is a 400 on a PUT too.
func (h *handler) kv(c *call) error {
	if err := checkLen("Key name", c.arg, maxKeyLen); err != nil {
		return err
	}
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	switch c.r.Method {
	case http.MethodGet:
		return h.kvGet(c, q)
	case http.MethodPut:
		return h.kvPut(c)
	}
	return h.kvDelete(c)
}

func missingKey(c *call) error {
	if c.arg == "" {
		return errorf(http.StatusBadRequest, "Missing key name")
	}
	return nil
}

// conflictingFlags refuses a request naming more than one of flags (S39).
func conflictingFlags(v url.Values, flags ...string) error {
	n := 0
	for _, f := range flags {
		if _, ok := v[f]; ok {
			n++
		}
	}
	if n > 1 {
		return errorf(http.StatusBadRequest, "Conflicting flags: %s", v.Encode())
	}
	return nil
}

// kvGet serves a key, a prefix (?recurse) or key names (?keys) (S45, S46).
func (h *handler) kvGet(c *call, q queryOpts) error {
	v := c.query()
	key := c.arg
	if _, ok := v["keys"]; ok {
		// Consul still honours its historic misspelling; the right one wins.
		sep := v.Get("seperator")
		if _, ok := v["separator"]; ok {
			sep = v.Get("separator")
		}
		return h.serveRead(c, q, func(s *model.State) view {
			a, err := h.kvListAuthz(c, s, key)
			if err != nil {
				return view{fail: err}
			}
			keys, filtered := readableKeys(s, a, key, sep)
			out := view{index: s.PrefixIndex(key), body: keys, filtered: filtered}
			switch {
			case len(keys) == 0 && key != "":
				out.status, out.body = http.StatusNotFound, nil
			case keys == nil:
				out.body = []string{}
			}
			return out
		})
	}
	if _, ok := v["recurse"]; ok {
		return h.serveRead(c, q, func(s *model.State) view {
			a, err := h.kvListAuthz(c, s, key)
			if err != nil {
				return view{fail: err}
			}
			entries := readableEntries(a, s.List(key))
			filtered := len(entries.kept) < entries.total
			if len(entries.kept) == 0 {
				return view{index: s.PrefixIndex(key), status: http.StatusNotFound, filtered: filtered}
			}
			out := make([]kvJSON, 0, len(entries.kept))
			for _, e := range entries.kept {
				out = append(out, toKV(e))
			}
			return view{index: s.PrefixIndex(key), body: out, filtered: filtered}
		})
	}
	if err := missingKey(c); err != nil {
		return err
	}
	_, raw := v["raw"]
	q.key = key
	return h.serveRead(c, q, func(s *model.State) view {
		// key:read is needed whether or not the key exists (S85).
		a, err := h.authz(c, s)
		if err == nil {
			err = aclFailure(a.Check(acl.ResourceKey, key, acl.AccessRead))
		}
		if err != nil {
			return view{fail: err}
		}
		e, ok := s.Get(key)
		if !ok {
			// Once blocked, only this key's own deletion or creation wakes
			// the read (CONSUL.md §7, not-found results).
			deleted, _ := s.Tombstone(key)
			return view{index: s.KeyIndex(key), watch: deleted, watchSet: true,
				status: http.StatusNotFound}
		}
		if raw {
			return view{index: e.ModifyIndex, raw: e.Value, isRaw: true}
		}
		return view{index: e.ModifyIndex, body: []kvJSON{toKV(e)}}
	})
}

// kvPut is set, cas, acquire (lock) or release (unlock) (S26-S39).
func (h *handler) kvPut(c *call) error {
	if err := missingKey(c); err != nil {
		return err
	}
	v := c.query()
	if err := conflictingFlags(v, "cas", "acquire", "release"); err != nil {
		return err
	}
	op := model.KVOp{Verb: model.KVSet, Key: c.arg}
	if _, ok := v["flags"]; ok {
		n, err := strconv.ParseUint(v.Get("flags"), 10, 64)
		if err != nil {
			return h.badNumber("flags", v.Get("flags"), err)
		}
		op.Flags = n
	}
	if _, ok := v["cas"]; ok {
		n, err := strconv.ParseUint(v.Get("cas"), 10, 64)
		if err != nil {
			return h.badNumber("cas", v.Get("cas"), err)
		}
		op.Verb, op.Index = model.KVCAS, n
	}
	if _, ok := v["acquire"]; ok {
		op.Verb, op.Session = model.KVLock, v.Get("acquire")
	}
	if _, ok := v["release"]; ok {
		op.Verb, op.Session = model.KVUnlock, v.Get("release")
	}
	if err := checkLen("Session ID", op.Session, maxNameLen); err != nil {
		return err
	}
	body, err := readBody(c, model.MaxValueSize, func(n int64) error {
		return errorf(http.StatusRequestEntityTooLarge,
			"Request body(%d bytes) too large, max size: %d bytes. See %s.", n, model.MaxValueSize, kvDocURL)
	})
	if err != nil {
		return err
	}
	if len(body) > 0 {
		op.Value = body
	}
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	// Every write, acquire and release included, needs key:write and
	// nothing on the session (S85).
	if err := h.allowed(c, acl.ResourceKey, op.Key, acl.AccessWrite); err != nil {
		return err
	}
	res, err := h.b.Apply(c.r.Context(), model.Command{KV: &op})
	var delay *leader.LockDelayError
	if errors.As(err, &delay) {
		// Consul's bare false, plus how long to wait (S25).
		c.w.Header().Set(lockDelayHeader, delay.Remaining.String())
		return writeJSON(c, http.StatusOK, false)
	}
	if err != nil {
		return h.applyFailure(err)
	}
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	if op.Verb == model.KVLock && res.OK {
		c.w.Header().Set(lockIndexHeader, strconv.FormatUint(res.Locked.LockIndex, 10))
		c.w.Header().Set(modifyIndexHeader, strconv.FormatUint(res.Locked.ModifyIndex, 10))
	}
	return writeJSON(c, http.StatusOK, op.Verb == model.KVSet || res.OK)
}

// kvDelete is delete, delete-tree (?recurse) or delete-cas (?cas) (S36).
func (h *handler) kvDelete(c *call) error {
	v := c.query()
	if err := conflictingFlags(v, "recurse", "cas"); err != nil {
		return err
	}
	op := model.KVOp{Verb: model.KVDelete, Key: c.arg}
	if _, ok := v["recurse"]; ok {
		op.Verb = model.KVDeleteTree
	} else if err := missingKey(c); err != nil {
		return err
	}
	if _, ok := v["cas"]; ok {
		n, err := strconv.ParseUint(v.Get("cas"), 10, 64)
		if err != nil {
			return h.badNumber("cas", v.Get("cas"), err)
		}
		op.Verb, op.Index = model.KVDeleteCAS, n
	}
	if here, err := h.leaderHere(c, nil); err != nil || !here {
		return err
	}
	if err := h.kvDeleteAllowed(c, op); err != nil {
		return err // S85
	}
	res, err := h.b.Apply(c.r.Context(), model.Command{KV: &op})
	if err != nil {
		return h.applyFailure(err)
	}
	if res.Err != nil {
		return h.rejection(res.Err)
	}
	return writeJSON(c, http.StatusOK, op.Verb != model.KVDeleteCAS || res.OK)
}
