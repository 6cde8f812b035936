package agent_test

import (
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// fastCoordinates sends every 10 ms and has the leader write every 10 ms,
// so a test sees the first coordinate soon; nothing here is timed.
func fastCoordinates(cfg *agent.Config) {
	cfg.Coordinates = agent.CoordinateConfig{IntervalMin: 10 * time.Millisecond,
		Stagger: func(time.Duration) time.Duration { return 0 }}
	cfg.Server.CoordinateUpdatePeriod = 10 * time.Millisecond
}

// TestAgentSendsItsCoordinate: a gossiping agent's coordinate reaches the
// catalog's coordinate table through the leader's batch, and a client
// agent's too, forwarded to the server (S89).
func TestAgentSendsItsCoordinate(t *testing.T) {
	a := agenttest.StartDevAgent(t, fastCoordinates)
	agenttest.StartClientWith(t, "client1", a, func(c *agent.ClientConfig) {
		c.Coordinates = agent.CoordinateConfig{IntervalMin: 10 * time.Millisecond,
			Stagger: func(time.Duration) time.Duration { return 0 }}
	})
	client := client(t, a.HTTPAddr())
	// Wait for both, each read blocking on the table's index.
	var list []*api.CoordinateEntry
	index := uint64(0)
	for len(list) < 2 {
		got, meta, err := client.Coordinate().Nodes(&api.QueryOptions{WaitIndex: index, WaitTime: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		list, index = got, meta.LastIndex
	}
	if list[0].Node != "client1" || list[1].Node != "dev" || len(list[1].Coord.Vec) != 8 {
		t.Fatalf("coordinates: %+v %+v", list[0], list[1])
	}
}

// TestDisabledCoordinatesSendNothing: with disable_coordinates the
// endpoints answer 401, so the agent has nothing to send to.
func TestDisabledCoordinatesSendNothing(t *testing.T) {
	a := agenttest.StartDevAgent(t, func(cfg *agent.Config) {
		fastCoordinates(cfg)
		cfg.Coordinates.Disable = true
	})
	client := client(t, a.HTTPAddr())
	if _, _, err := client.Coordinate().Nodes(nil); err == nil {
		t.Fatal("coordinate read answered with coordinates disabled")
	}
}
