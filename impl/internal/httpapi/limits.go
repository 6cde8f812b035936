package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/tenurekv/tenure/impl/internal/catalogwire"
	"github.com/tenurekv/tenure/model"
)

// Request limits (SPEC S39; DESIGN.md "Bad input and bad clients"). Consul bounds values
// (512 KiB), txn bodies (512 KiB) and txn op counts (128) and nothing else:
// it stores a 1 MiB key name, and every such name costs memory on every
// server for as long as its tombstone lives. tenure bounds every name and
// count a client can send, at sizes far beyond what real clients use (keys
// are paths, names are labels, IDs are UUIDs), so a well-behaved client never
// meets a limit and a misbehaving one cannot grow the state without bound.
const (
	// maxKeyLen bounds a KV key (path, txn op): deep hierarchical keys stay
	// well under 1 KiB.
	maxKeyLen = 8 << 10
	// maxNameLen bounds a session's Name and Node, a node's name and
	// address, a check's ID and name, and a session ID sent by a client.
	maxNameLen = 1 << 10
	// maxTTLLen bounds a session's TTL text, which is stored and echoed as
	// sent; "86400s" needs 6 bytes.
	maxTTLLen = 64
	// maxChecks bounds the checks one session binds and the checks one
	// catalog register carries.
	maxChecks = 64
	// maxJSONBody bounds the JSON body of session create and the catalog
	// endpoints. It fits the largest body the field limits allow (a register
	// of 64 checks with 1 KiB IDs and names is about 140 KiB), so a body
	// within every field limit is never refused for its size alone.
	maxJSONBody = 256 << 10
	// maxTxnBody is Consul's txn_max_req_len default.
	maxTxnBody = 512 << 10
	// maxOutputLen bounds a check's Notes and Output: Consul's agent keeps
	// at most 4 KiB of a check's output (check_output_max_size).
	maxOutputLen = 4 << 10
	// maxTags bounds a service's tags and meta pairs, and a prepared query's
	// tag, check and failover lists.
	maxTags = 64
	// maxNodeMeta bounds a node's meta pairs: the 64 an agent takes from
	// its operator (Consul's bound) and the two it adds itself (S63).
	maxNodeMeta = maxTags + 2
	// maxRegisterBody bounds a catalog register's body, which may carry a
	// service and 64 checks with their notes and output (about 800 KiB at
	// every field's limit).
	maxRegisterBody = 1 << 20
	// maxQueryBody bounds a prepared-query definition.
	maxQueryBody = 256 << 10
	// maxServiceAddresses bounds a service's tagged addresses and its named
	// ports: Consul's own tags are six (lan, wan and their ipv4/ipv6), and
	// multi-port services name a few ports.
	maxServiceAddresses = 16
	// maxProxyJSON bounds a service's connect-proxy configuration as
	// stored (its canonical JSON). With the other service limits a register
	// at every limit stays within maxRegisterBody.
	maxProxyJSON = 64 << 10
)

// tooLong is the 413 for a name or key over its limit. The value itself is
// not quoted: it may be large.
func tooLong(what string, n, limit int) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, "%s too long (%d > %d bytes)", what, n, limit)
}

// checkLen refuses s if it is longer than limit bytes.
func checkLen(what, s string, limit int) error {
	if len(s) > limit {
		return tooLong(what, len(s), limit)
	}
	return nil
}

// tooMany is the 413 for a list over its limit.
func tooMany(what string, n, limit int) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, "Too many %s (%d > %d)", what, n, limit)
}

// bodyTooLarge is the 413 text of a JSON endpoint's body over maxJSONBody.
func bodyTooLarge(n int64) error { return bodyOver(maxJSONBody)(n) }

// bodyOver is the 413 of a body over limit.
func bodyOver(limit int64) func(n int64) error {
	return func(n int64) error {
		return errorf(http.StatusRequestEntityTooLarge, "Request body(%d bytes) too large, max size: %d bytes.", n, limit)
	}
}

// createLimits refuses a session create whose fields exceed the limits.
func createLimits(cs model.CreateSession) *model.Error {
	for _, f := range []struct {
		what, value string
		limit       int
	}{
		{"Session Name", cs.Name, maxNameLen},
		{"Session Node", cs.Node, maxNameLen},
		{"Session TTL", cs.TTL, maxTTLLen},
		{"Session Behavior", string(cs.Behavior), maxTTLLen},
	} {
		if len(f.value) > f.limit {
			return tooLargeErr(tooLong(f.what, len(f.value), f.limit))
		}
	}
	// The three lists together: their union is what the session binds.
	if n := len(cs.Checks) + len(cs.NodeChecks) + len(cs.ServiceChecks); n > maxChecks {
		return tooLargeErr(tooMany("session checks", n, maxChecks))
	}
	ids := slices.Concat(cs.Checks, cs.NodeChecks)
	for _, sc := range cs.ServiceChecks {
		ids = append(ids, sc.ID, sc.Namespace)
	}
	for _, id := range ids {
		if len(id) > maxNameLen {
			return tooLargeErr(tooLong("Check ID", len(id), maxNameLen))
		}
	}
	return nil
}

func tooLargeErr(e *apiError) *model.Error {
	return &model.Error{Kind: model.ErrTooLarge, Msg: e.msg}
}

// registerLimits refuses a catalog register body whose fields exceed the
// limits. It runs before any other check, so no reason quotes a huge value.
func registerLimits(b catalogwire.Register) error {
	if err := checkLen("Node name", b.Node, maxNameLen); err != nil {
		return err
	}
	if err := checkLen("Node address", b.Address, maxNameLen); err != nil {
		return err
	}
	if err := checkLen("Node ID", b.ID, maxNameLen); err != nil {
		return err
	}
	if err := metaLimits("Node meta", b.NodeMeta, maxNodeMeta); err != nil {
		return err
	}
	if err := metaLimits("Tagged addresses", b.TaggedAddresses, maxTags); err != nil {
		return err
	}
	if sv := b.Service; sv != nil {
		if err := serviceLimits(sv); err != nil {
			return err
		}
	}
	checks := b.Checks
	if b.Check != nil {
		checks = append(checks[:len(checks):len(checks)], b.Check)
	}
	if len(checks) > maxChecks {
		return tooMany("checks", len(checks), maxChecks)
	}
	for _, ch := range checks {
		if ch == nil {
			continue
		}
		for _, f := range []struct{ what, value string }{
			{"Check node", ch.Node}, {"Check ID", ch.CheckID}, {"Check name", ch.Name},
			{"Check status", string(ch.Status)}, {"Check service ID", ch.ServiceID}, {"Check type", ch.Type},
		} {
			if err := checkLen(f.what, f.value, maxNameLen); err != nil {
				return err
			}
		}
		if err := checkLen("Check notes", ch.Notes, maxOutputLen); err != nil {
			return err
		}
		if err := checkLen("Check output", ch.Output, maxOutputLen); err != nil {
			return err
		}
	}
	return nil
}

// serviceLimits refuses a service whose names, tags, meta, addresses,
// ports or proxy configuration exceed the limits.
func serviceLimits(sv *catalogwire.Service) error {
	fields := []struct{ what, value string }{
		{"Service ID", sv.ID}, {"Service name", sv.Service}, {"Service address", sv.Address},
		{"Service kind", sv.Kind}, {"Service socket path", sv.SocketPath},
	}
	if l := sv.Locality; l != nil {
		fields = append(fields, struct{ what, value string }{"Service locality region", l.Region},
			struct{ what, value string }{"Service locality zone", l.Zone})
	}
	for _, f := range fields {
		if err := checkLen(f.what, f.value, maxNameLen); err != nil {
			return err
		}
	}
	if err := tagLimits("Service tag", sv.Tags); err != nil {
		return err
	}
	if err := metaLimits("Service meta", sv.Meta, maxTags); err != nil {
		return err
	}
	if n := len(sv.TaggedAddresses); n > maxServiceAddresses {
		return tooMany("Service tagged addresses", n, maxServiceAddresses)
	}
	for k, a := range sv.TaggedAddresses {
		if err := checkLen("Service tagged address key", k, maxNameLen); err != nil {
			return err
		}
		if err := checkLen("Service tagged address", a.Address, maxNameLen); err != nil {
			return err
		}
	}
	if n := len(sv.Ports); n > maxServiceAddresses {
		return tooMany("Service ports", n, maxServiceAddresses)
	}
	for _, p := range sv.Ports {
		if err := checkLen("Service port name", p.Name, maxNameLen); err != nil {
			return err
		}
	}
	if sv.Proxy != nil {
		b, err := json.Marshal(sv.Proxy)
		if err != nil {
			return errorf(http.StatusBadRequest, "Invalid service proxy: %v", err)
		}
		if err := checkLen("Service proxy configuration", string(b), maxProxyJSON); err != nil {
			return err
		}
	}
	return nil
}

// tagLimits bounds a list of short strings (tags, check IDs, datacenters).
func tagLimits(what string, tags []string) error {
	if len(tags) > maxTags {
		return tooMany(what+"s", len(tags), maxTags)
	}
	for _, tag := range tags {
		if err := checkLen(what, tag, maxNameLen); err != nil {
			return err
		}
	}
	return nil
}

// metaLimits bounds a map of short strings.
func metaLimits(what string, meta map[string]string, maxPairs int) error {
	if len(meta) > maxPairs {
		return tooMany(what+" pairs", len(meta), maxPairs)
	}
	for k, v := range meta {
		if err := checkLen(what+" key", k, maxNameLen); err != nil {
			return err
		}
		if err := checkLen(what+" value", v, maxNameLen); err != nil {
			return err
		}
	}
	return nil
}

// txnOpLimits refuses a txn KV op whose key or session is over its limit.
func txnOpLimits(i int, op model.KVOp) error {
	if len(op.Key) > maxKeyLen {
		return tooLong(fmt.Sprintf("Key name of op %d", i), len(op.Key), maxKeyLen)
	}
	if len(op.Session) > maxNameLen {
		return tooLong(fmt.Sprintf("Session ID of op %d", i), len(op.Session), maxNameLen)
	}
	return nil
}
