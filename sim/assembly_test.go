package sim

import (
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/hashicorp/raft"
	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/sim/internal/core"
)

// binaryComponents is the list of parts `tenure agent -server` builds,
// kept true by cmd/tenure's TestServerComponents.
const binaryComponents = "../cmd/tenure/testdata/server-components.txt"

// acceptedDifferences are the binary's parts a simulated server leaves out,
// each for a reason that does not change what the simulator checks.
var acceptedDifferences = map[string]string{
	// go-metrics' sink is global to a process, and the simulator runs
	// every server in one; the endpoint only reports.
	"telemetry: /v1/agent/metrics": "one process-wide sink",
	// serf writes its snapshot with the os package, which a synctest
	// bubble cannot use; a restarted simulated server joins the running
	// client agents itself instead (core.Cluster.Start).
	"gossip: snapshot of the pool in the data directory, rejoined at restart": "serf's file is real I/O",
}

// TestServersAreTheShippedAgent: every simulated server is built from the
// binary's parts, no more and no fewer (bar acceptedDifferences), so the
// simulator cannot check an assembly tenure does not ship. A server on
// raft's in-memory log (as the simulator's were before it had a disk) is
// told apart.
func TestServersAreTheShippedAgent(t *testing.T) {
	want := binaryServerComponents(t)
	for _, tc := range []struct {
		name    string
		variant *core.Variant
		differ  []string // the parts that must differ from the binary's
	}{
		{"shipped", nil, nil},
		{"in-memory-log", &core.Variant{Name: "in-memory-log", Config: func(c *agent.ServerConfig) {
			mem := raft.NewInmemStore()
			c.LogStore, c.StableStore = mem, mem
		}}, []string{"raft log: injected *raft.InmemStore", "test seam: AdjustServer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hdr := core.RunHeader{Seed: 1, Clocks: map[string]core.ClockSkew{}}
				core.PlanServerClocks(&hdr, 3, false, core.Stream(1, "assembly"))
				base, err := core.Start(hdr, tc.variant, false, true)
				if err != nil {
					t.Fatal(err)
				}
				defer base.Close()
				for _, s := range base.Cl.Servers {
					got := s.Components()
					var differ []string
					for _, c := range got {
						if !slices.Contains(want, c) {
							differ = append(differ, c)
						}
					}
					if len(got) != len(want) && len(differ) == 0 {
						differ = append(differ, "a part of the binary's is missing")
					}
					if !slices.Equal(differ, tc.differ) {
						t.Errorf("simulated server %s is built from\n  %s\nthe binary's server agent from\n  %s\nparts not the binary's: %q, want %q",
							s.Name, strings.Join(got, "\n  "), strings.Join(want, "\n  "), differ, tc.differ)
					}
				}
			})
		})
	}
}

// binaryServerComponents reads the binary's list, without the accepted
// differences.
func binaryServerComponents(t *testing.T) []string {
	b, err := os.ReadFile(binaryComponents)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if _, ok := acceptedDifferences[c]; !ok {
			want = append(want, c)
		}
	}
	return want
}
