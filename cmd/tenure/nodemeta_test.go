package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestNodeMetaSettings (S63): -node-meta pairs as Consul parses them (the
// value may hold colons or be missing), node_meta in JSON and HCL files,
// merged by key with later files and then flags winning.
func TestNodeMetaSettings(t *testing.T) {
	s, _, err := settingsFrom(t, "-dev", "-node-meta", "rack:r1", "-node-meta", "url:http://x:80", "-node-meta", "bare",
		"-node-meta", "rack:r2")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"rack": "r2", "url": "http://x:80", "bare": ""}; !maps.Equal(s.NodeMeta, want) {
		t.Errorf("flags gave %v, want %v", s.NodeMeta, want)
	}
	if s, _, _ := settingsFrom(t, "-dev"); s.NodeMeta != nil {
		t.Errorf("no -node-meta gave %v", s.NodeMeta)
	}

	write := configWriter(t, t.TempDir())
	a := write("a.json", `{"node_meta": {"rack": "r1", "zone": "a"}}`)
	b := write("b.hcl", "node_meta {\n  zone = \"b\"\n  tier = \"gold\"\n}\n")
	s, _, err = settingsFrom(t, "-dev", "-config-file", a, "-config-file", b, "-node-meta", "tier:silver")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"rack": "r1", "zone": "b", "tier": "silver"}; !maps.Equal(s.NodeMeta, want) {
		t.Errorf("files then flags gave %v, want %v", s.NodeMeta, want)
	}
	if _, _, err := settingsFrom(t, "-dev", "-config-file", write("n.json", `{"node_meta": {"k": 1}}`)); err == nil ||
		!strings.Contains(err.Error(), "node_meta: k: want a string") {
		t.Errorf("a number as meta value: %v", err)
	}
}

// TestNodeMetaRefusedAsConsulRefusesIt: each refusal Consul's agent makes
// at start, in its words (measured on Consul 1.22.7).
func TestNodeMetaRefusedAsConsulRefusesIt(t *testing.T) {
	many := []string{"-dev"}
	for i := range model.MetaMaxPairs + 1 {
		many = append(many, "-node-meta", "k"+strings.Repeat("x", i)+":v")
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"blank key":       {[]string{"-dev", "-node-meta", ":v"}, "node_meta invalid: Couldn't load metadata pair ('', 'v'): Key cannot be blank"},
		"space in key":    {[]string{"-dev", "-node-meta", "a b:1"}, "('a b', '1'): Key contains invalid characters"},
		"dot in key":      {[]string{"-dev", "-node-meta", "a.b:1"}, "('a.b', '1'): Key contains invalid characters"},
		"reserved prefix": {[]string{"-dev", "-node-meta", "consul-x:1"}, "('consul-x', '1'): Key prefix 'consul-' is reserved for internal use"},
		"long key":        {[]string{"-dev", "-node-meta", strings.Repeat("k", 129) + ":1"}, "Key is too long (limit: 128 characters)"},
		"long value":      {[]string{"-dev", "-node-meta", "k:" + strings.Repeat("v", 513)}, "Value is too long (limit: 512 characters)"},
		"too many pairs":  {many, "node_meta invalid: Node metadata cannot contain more than 64 key/value pairs"},
	} {
		if _, _, err := settingsFrom(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	for name, args := range map[string][]string{
		"key of 128":          {"-dev", "-node-meta", strings.Repeat("k", 128) + ":1"},
		"value of 512":        {"-dev", "-node-meta", "k:" + strings.Repeat("v", 512)},
		"64 pairs":            many[:1+2*model.MetaMaxPairs],
		"underscore and dash": {"-dev", "-node-meta", "a_b-C9:1"},
	} {
		if _, _, err := settingsFrom(t, args...); err != nil {
			t.Errorf("%s refused: %v", name, err)
		}
	}
}
