package core

import "math/rand"

// gossipRand gives the agent on node (server or client) its memberlist
// and serf randomness: one source per node and use (probe order, gossip
// targets, tickers' staggers, …), each seeded from the run's seed, the
// node and the use. Upstream, both draw from the global math/rand that
// raft draws from as well, so which goroutine got which value depended on
// the order goroutines ran in; with a source per use a node's draws depend
// only on the order of its own draws of that use. It needs the patched
// memberlist and serf (third_party/, DESIGN.md "Patched dependencies").
// A restarted server draws its sequences again from their start.
func (c *Cluster) gossipRand(node string) func(use string) *rand.Rand {
	return func(use string) *rand.Rand {
		return rand.New(rand.NewSource(int64(Stream(c.seed, "gossip/"+node+"/"+use).Uint64())))
	}
}
