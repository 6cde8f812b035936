package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/tenurekv/tenure/model"
)

// lockDelayMinThreshold: Consul reads a LockDelay below 1000 (ns) as seconds,
// because old clients sent 15 meaning 15s (S9, CONSUL.md §1).
const lockDelayMinThreshold = 1000

// createBody is the session-create body. Field names match
// case-insensitively and unknown fields are ignored, as Consul's lenient
// Session.UnmarshalJSON does; LockDelay takes a string or a number.
type createBody struct {
	Name          string
	Node          string
	LockDelay     any
	Behavior      model.Behavior
	TTL           string
	NodeChecks    []string
	ServiceChecks []serviceCheckJSON
	Checks        []string // legacy (before Consul 1.7)
}

// decodeSessionCreate applies Consul's defaults (S2), decodes body if it is
// non-empty, and applies Consul's check-list fixups (CONSUL.md §1). node is the
// default Node. The ID is left for the backend to choose (S1).
func decodeSessionCreate(body []byte, node string) (model.CreateSession, error) {
	b := createBody{
		Node:       node,
		NodeChecks: []string{model.SerfHealthCheckID},
		Checks:     []string{model.SerfHealthCheckID},
		Behavior:   model.BehaviorRelease,
	}
	lockDelay := model.DefaultLockDelay
	if len(body) > 0 {
		// A Decoder, not Unmarshal: Consul reads the first JSON value and
		// ignores whatever follows it.
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&b); err != nil {
			return model.CreateSession{}, err
		}
		if b.LockDelay != nil {
			d, err := parseLockDelay(b.LockDelay)
			if err != nil {
				return model.CreateSession{}, err
			}
			lockDelay = d
		}
	}
	cs := model.CreateSession{Name: b.Name, Node: b.Node, LockDelay: lockDelay, Behavior: b.Behavior, TTL: b.TTL}
	cs.Checks, cs.NodeChecks, cs.ServiceChecks = effectiveChecks(b)
	return cs, nil
}

// parseLockDelay reads a duration string or a number of nanoseconds; any
// other JSON type gives 0; a result below 1000 is taken as seconds (S9).
func parseLockDelay(v any) (time.Duration, error) {
	var d time.Duration
	switch v := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, err
		}
	case float64:
		d = floatDuration(v)
	}
	if d < lockDelayMinThreshold {
		d = saturatingSeconds(d)
	}
	return d, nil
}

// floatDuration converts without Go's implementation-defined overflow.
func floatDuration(f float64) time.Duration {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(f)
}

// saturatingSeconds is d × 1s clamped to the int64 range. Only values below
// the threshold reach it, so only the negative side can overflow.
func saturatingSeconds(d time.Duration) time.Duration {
	if d < math.MinInt64/time.Second {
		return math.MinInt64
	}
	return d * time.Second
}

// effectiveChecks applies Consul's check-list fixup (model.FixupSessionChecks,
// S56, S7) and returns the three lists as the session keeps them; the
// session binds their union (model.Session.CheckIDs):
//   - Checks empty ([] or null): NodeChecks is emptied too (S7);
//   - Checks exactly [serfHealth] (the default): NodeChecks decide;
//   - NodeChecks empty: the legacy Checks are dropped too;
//   - otherwise both lists count.
//
// ServiceChecks are kept as sent, whatever the other two lists hold.
func effectiveChecks(b createBody) (legacy, node []string, service []model.ServiceCheck) {
	legacy, node = model.FixupSessionChecks(b.Checks, b.NodeChecks)
	for _, sc := range b.ServiceChecks {
		service = append(service, model.ServiceCheck{ID: sc.ID, Namespace: sc.Namespace})
	}
	return legacy, node, service
}

// validateCreate rejects what the model would reject from the request alone
// (S1, S3, S4), before anything is proposed, so a bad create costs no index.
func validateCreate(cs model.CreateSession) *model.Error {
	if cs.Node == "" {
		return &model.Error{Kind: model.ErrInvalid, Msg: "Must provide Node"}
	}
	switch cs.Behavior {
	case "", model.BehaviorRelease, model.BehaviorDelete:
	default:
		return &model.Error{Kind: model.ErrInvalid, Msg: fmt.Sprintf("Invalid Behavior setting '%s'", cs.Behavior)}
	}
	if err := model.ValidateTTL(cs.TTL); err != nil {
		return err
	}
	return nil
}
