package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/tenurekv/tenure/impl/agent"
)

// Consul's bounds on an agent's node meta (-node-meta, node_meta).
const (
	maxNodeMetaPairs    = 64
	maxNodeMetaKeyLen   = 128
	maxNodeMetaValueLen = 512
)

var nodeMetaKeyChars = regexp.MustCompile("^[a-zA-Z0-9_-]+$")

// parseNodeMeta reads one -node-meta value as Consul does: "key:value",
// where the value may hold more colons and a missing one means "".
func parseNodeMeta(raw string) (key, value string) {
	key, value, _ = strings.Cut(raw, ":")
	return key, value
}

// validateNodeMeta refuses what Consul's agent refuses at start, in its
// words: too many pairs, and keys that are blank, use other characters than
// letters, digits, '_' and '-', are too long or take the "consul-" prefix
// the agent's own keys use, or values that are too long. Keys are checked
// in sorted order so that the first complaint is the same on every run.
func validateNodeMeta(meta map[string]string) error {
	if len(meta) > maxNodeMetaPairs {
		return fmt.Errorf("node_meta invalid: Node metadata cannot contain more than %d key/value pairs", maxNodeMetaPairs)
	}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		v := meta[k]
		var reason string
		switch {
		case k == "":
			reason = "Key cannot be blank"
		case !nodeMetaKeyChars.MatchString(k):
			reason = "Key contains invalid characters"
		case len(k) > maxNodeMetaKeyLen:
			reason = fmt.Sprintf("Key is too long (limit: %d characters)", maxNodeMetaKeyLen)
		case strings.HasPrefix(k, agent.ReservedMetaPrefix):
			reason = fmt.Sprintf("Key prefix '%s' is reserved for internal use", agent.ReservedMetaPrefix)
		case len(v) > maxNodeMetaValueLen:
			reason = fmt.Sprintf("Value is too long (limit: %d characters)", maxNodeMetaValueLen)
		default:
			continue
		}
		return fmt.Errorf("node_meta invalid: Couldn't load metadata pair ('%s', '%s'): %s", k, v, reason)
	}
	return nil
}
