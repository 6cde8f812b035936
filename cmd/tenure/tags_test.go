package main

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenurekv/tenure/impl/gossip"
)

// TestGossipTagsForConsulMembers: `consul members` reads its Build column
// from the build tag (the part before ':') and Protocol from vsn; without
// them it prints "< 0.3" and an empty protocol.
func TestGossipTagsForConsulMembers(t *testing.T) {
	s, _, err := settingsFrom(t, "-dev")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.agentConfig(hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	tags := cfg.Gossip.Tags
	if !strings.HasPrefix(tags[gossip.TagBuild], version+":") {
		t.Errorf("build tag %q, want %q then the revision", tags[gossip.TagBuild], version+":")
	}
	if tags[gossip.TagVsn] != "2" || tags[gossip.TagVsnMin] != "2" || tags[gossip.TagVsnMax] != "3" {
		t.Errorf("protocol tags %v, want vsn 2 in 2..3", tags)
	}
}
