package main

import (
	"strings"
	"testing"
)

// TestGossipTagsForConsulMembers: `consul members` reads its Build column
// from the build tag (the part before ':') and Protocol from vsn; without
// them it prints "< 0.3" and an empty protocol.
func TestGossipTagsForConsulMembers(t *testing.T) {
	s, _, err := settingsFrom(t, "-dev")
	if err != nil {
		t.Fatal(err)
	}
	// The gossip part alone: the whole agent configuration would bind
	// the dev agent's HTTP port, 8500, which a running agent may hold.
	g, err := s.gossipConfig()
	if err != nil {
		t.Fatal(err)
	}
	tags := g.Tags
	// The tags' names are Consul's, which its tools read.
	if !strings.HasPrefix(tags["build"], version+":") {
		t.Errorf("build tag %q, want %q then the revision", tags["build"], version+":")
	}
	if tags["vsn"] != "2" || tags["vsn_min"] != "2" || tags["vsn_max"] != "3" {
		t.Errorf("protocol tags %v, want vsn 2 in 2..3", tags)
	}
}
