package model

import (
	"fmt"
	"strings"
	"testing"
)

// TestMetaProblem: each of Consul's rules refuses in its words, the first
// bad pair in key order is named, and a mesh gateway alone may carry
// consul-wan-federation.
func TestMetaProblem(t *testing.T) {
	many := map[string]string{}
	for i := range MetaMaxPairs + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	atMost := map[string]string{}
	for i := range MetaMaxPairs {
		atMost[fmt.Sprintf("k%d", i)] = "v"
	}
	for name, tc := range map[string]struct {
		kind string
		meta map[string]string
		want string
	}{
		"none":               {"", nil, ""},
		"fine":               {"", map[string]string{"a-b_C9": "x", strings.Repeat("k", 128): strings.Repeat("v", 512)}, ""},
		"as many as allowed": {"", atMost, ""},
		"too many":           {"", many, "Node metadata cannot contain more than 64 key/value pairs"},
		"blank key":          {"", map[string]string{"": "v"}, "Couldn't load metadata pair ('', 'v'): Key cannot be blank"},
		"dot":                {"", map[string]string{"a.b": "v"}, "Couldn't load metadata pair ('a.b', 'v'): Key contains invalid characters"},
		"space":              {"", map[string]string{"a b": "v"}, "Couldn't load metadata pair ('a b', 'v'): Key contains invalid characters"},
		"long key":           {"", map[string]string{strings.Repeat("k", 129): "v"}, "Couldn't load metadata pair ('" + strings.Repeat("k", 129) + "', 'v'): Key is too long (limit: 128 characters)"},
		"reserved":           {"", map[string]string{"consul-x": "y"}, "Couldn't load metadata pair ('consul-x', 'y'): Key prefix 'consul-' is reserved for internal use"},
		"long value":         {"", map[string]string{"k": strings.Repeat("v", 513)}, "Couldn't load metadata pair ('k', '" + strings.Repeat("v", 513) + "'): Value is too long (limit: 512 characters)"},
		"first in key order": {"", map[string]string{"z z": "1", "a a": "2"}, "Couldn't load metadata pair ('a a', '2'): Key contains invalid characters"},
		"gateway's key":      {"mesh-gateway", map[string]string{"consul-wan-federation": "1"}, ""},
		"gateway, other":     {"mesh-gateway", map[string]string{"consul-x": "1"}, "Couldn't load metadata pair ('consul-x', '1'): Key prefix 'consul-' is reserved for internal use"},
		"not a gateway":      {"connect-proxy", map[string]string{"consul-wan-federation": "1"}, "Couldn't load metadata pair ('consul-wan-federation', '1'): Key prefix 'consul-' is reserved for internal use"},
	} {
		if got := ServiceMetaProblem(tc.kind, tc.meta); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
