package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Consul's rules for node and service meta (S63, S74): at most MetaMaxPairs
// pairs; keys of letters, digits, '_' and '-', at most MetaKeyMaxLen long,
// not under MetaReservedPrefix; values at most MetaValueMaxLen long.
const (
	MetaMaxPairs       = 64
	MetaKeyMaxLen      = 128
	MetaValueMaxLen    = 512
	MetaReservedPrefix = "consul-"
	// metaWANFederation is the one reserved key a mesh gateway may carry.
	metaWANFederation = "consul-wan-federation"
)

// MetaProblem is why meta breaks Consul's rules, in Consul's words, or ""
// if it does not. reservedOK says which keys under MetaReservedPrefix are
// allowed (nil: none). Consul reports the first bad pair of a map's random
// order; tenure reports the first in key order, so every run says the same.
func MetaProblem(meta map[string]string, reservedOK func(key string) bool) string {
	if len(meta) > MetaMaxPairs {
		return fmt.Sprintf("Node metadata cannot contain more than %d key/value pairs", MetaMaxPairs)
	}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		v := meta[k]
		var reason string
		switch {
		case k == "":
			reason = "Key cannot be blank"
		case !metaKeyChars(k):
			reason = "Key contains invalid characters"
		case len(k) > MetaKeyMaxLen:
			reason = fmt.Sprintf("Key is too long (limit: %d characters)", MetaKeyMaxLen)
		case strings.HasPrefix(k, MetaReservedPrefix) && (reservedOK == nil || !reservedOK(k)):
			reason = fmt.Sprintf("Key prefix '%s' is reserved for internal use", MetaReservedPrefix)
		case len(v) > MetaValueMaxLen:
			reason = fmt.Sprintf("Value is too long (limit: %d characters)", MetaValueMaxLen)
		default:
			continue
		}
		return fmt.Sprintf("Couldn't load metadata pair ('%s', '%s'): %s", k, v, reason)
	}
	return ""
}

// ServiceMetaProblem is MetaProblem for a service of the given kind: only
// a mesh gateway may carry a reserved key, consul-wan-federation.
func ServiceMetaProblem(kind string, meta map[string]string) string {
	var reservedOK func(string) bool
	if kind == "mesh-gateway" {
		reservedOK = func(k string) bool { return k == metaWANFederation }
	}
	return MetaProblem(meta, reservedOK)
}

func metaKeyChars(k string) bool {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
