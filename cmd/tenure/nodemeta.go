package main

import (
	"fmt"
	"strings"

	"github.com/tenurekv/tenure/model"
)

// parseNodeMeta reads one -node-meta value as Consul does: "key:value",
// where the value may hold more colons and a missing one means "".
func parseNodeMeta(raw string) (key, value string) {
	key, value, _ = strings.Cut(raw, ":")
	return key, value
}

// validateNodeMeta refuses what Consul's agent refuses at start, in its
// words (model.MetaProblem: the "consul-" prefix is the agent's own).
func validateNodeMeta(meta map[string]string) error {
	if p := model.MetaProblem(meta, nil); p != "" {
		return fmt.Errorf("node_meta invalid: %s", p)
	}
	return nil
}
