package httpapi

import (
	"hash/fnv"
	"math/rand/v2"
	"sync"
)

// shuffler is a handler's own source for the order Consul randomises
// (a prepared query's instances): seeded from the agent's node name rather
// than drawn from the global source, so that a simulated run repeats, while
// agents still differ from each other and each call from the last.
type shuffler struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newShuffler(node string) *shuffler {
	h := fnv.New64a()
	_, _ = h.Write([]byte(node))
	seed := h.Sum64()
	return &shuffler{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// shuffle permutes n elements with swap, as rand.Shuffle does.
func (s *shuffler) shuffle(n int, swap func(i, j int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.Shuffle(n, swap)
}
