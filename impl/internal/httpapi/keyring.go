package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tenurekv/tenure/impl/internal/gossip"
)

// Keyring is what /v1/operator/keyring needs of the agent's gossip pool
// (package gossip's Pool): a keyring operation across the pool. A Members
// that lacks it answers 501.
type Keyring interface {
	Keyring(op gossip.KeyOp, key string, relayFactor uint8) (gossip.KeyringResult, error)
}

// keyringJSON is one pool's answer, in consul/api's KeyringResponse shape.
// tenure has one pool, the LAN: no WAN, segment or partition.
type keyringJSON struct {
	WAN         bool
	Datacenter  string
	Segment     string
	Messages    map[string]string `json:",omitempty"`
	Keys        map[string]int
	PrimaryKeys map[string]int
	NumNodes    int
}

// operatorKeyring is /v1/operator/keyring, as `consul keyring` uses it:
// GET lists the keys every member holds, POST installs a key, PUT makes an
// installed key the primary one, DELETE removes a key that is not the
// primary one; each runs across the gossip pool (gossip.Pool.Keyring),
// from the agent that was asked, server or client. The refusals are
// Consul's, with its words.
func (h *handler) operatorKeyring(c *call) error {
	if err := h.keyringAllowed(c); err != nil {
		return err // S90
	}
	ms, err := h.members()
	if err != nil {
		return err
	}
	kr, ok := ms.(Keyring)
	if !ok {
		return errorf(http.StatusNotImplemented, "this agent has no gossip keyring")
	}
	var body struct{ Key string }
	if c.r.Method != http.MethodGet {
		b, err := readBody(c, maxJSONBody, bodyTooLarge)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			return decodeFailed(err)
		}
	}
	q := c.query()
	var relay uint8
	if v := q.Get("relay-factor"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errorf(http.StatusBadRequest, "Error parsing relay factor: %v", err)
		}
		if n < 0 || n > 5 {
			return errorf(http.StatusBadRequest, "Invalid relay-factor: Relay factor must be in range: [0, 5]")
		}
		relay = uint8(n)
	}
	if v := q.Get("local-only"); v != "" {
		local, err := strconv.ParseBool(v)
		if err != nil {
			return errorf(http.StatusBadRequest, "Error parsing local-only: %v", err)
		}
		// Consul's local-only keeps a list from going to other
		// datacenters; tenure has one, so a list is the same either way.
		if local && c.r.Method != http.MethodGet {
			return errorf(http.StatusBadRequest, "Invalid use of local-only: local-only can only be set for list requests")
		}
	}
	op := map[string]gossip.KeyOp{http.MethodGet: gossip.KeyList, http.MethodPost: gossip.KeyInstall,
		http.MethodPut: gossip.KeyUse, http.MethodDelete: gossip.KeyRemove}[c.r.Method]
	res, err := kr.Keyring(op, body.Key, relay)
	if err != nil {
		return errorf(http.StatusInternalServerError, "%s", keyringFailure(h.opts.Datacenter, err, res.Messages))
	}
	if op != gossip.KeyList {
		return nil
	}
	return writeJSON(c, http.StatusOK, []keyringJSON{{Datacenter: h.opts.Datacenter, Messages: res.Messages,
		Keys: nonNilCounts(res.Keys), PrimaryKeys: nonNilCounts(res.PrimaryKeys), NumNodes: res.NumNodes}})
}

// keyringFailure is Consul's report of a failed keyring operation, the
// pool's error then each member's message (by node, sorted), on one line.
// Neither ever holds a key: serf's errors name counts and reasons.
func keyringFailure(dc string, err error, messages map[string]string) string {
	errs := []string{fmt.Sprintf("%s (LAN) error: %s", dc, oneLine(err.Error()))}
	nodes := make([]string, 0, len(messages))
	for n := range messages {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		errs = append(errs, fmt.Sprintf("%s: %s", n, oneLine(messages[n])))
	}
	what := "errors"
	if len(errs) == 1 {
		what = "error"
	}
	return fmt.Sprintf("%d %s occurred: * %s", len(errs), what, strings.Join(errs, " * "))
}

func nonNilCounts(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}
