package gossip

import (
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"
)

// TestPatchedDependencies: the build uses tenure's patched memberlist and
// serf (go.mod's replace to third_party/, DESIGN.md "Patched
// dependencies"), and a pool hands Config.Rand to both: Start asks it for
// every named use of randomness, memberlist's and serf's. Were the replace
// dropped, this would not compile: upstream has no memberlist.Config.Rand,
// serf.Config.Rand or Rand* names.
func TestPatchedDependencies(t *testing.T) {
	var mu sync.Mutex
	var uses []string
	p, err := Start(Config{NodeName: "a", Transport: (&memberlist.MockNetwork{}).NewTransport("a"),
		Rand: func(use string) *rand.Rand {
			mu.Lock()
			defer mu.Unlock()
			uses = append(uses, use)
			return rand.New(rand.NewSource(1))
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(uses)
	all := []string{memberlist.RandProbeStagger, memberlist.RandGossipStagger, memberlist.RandPushPullStagger,
		memberlist.RandProbeIndirect, memberlist.RandProbeOrder, memberlist.RandNodeOffset, memberlist.RandGossip,
		memberlist.RandPushPull, serf.RandQueryID, serf.RandReconnect, serf.RandQueryRelay, serf.RandCoordinate}
	slices.Sort(all)
	if !slices.Equal(uses, all) {
		t.Fatalf("Start asked Rand for %v, want every use %v", uses, all)
	}
}
