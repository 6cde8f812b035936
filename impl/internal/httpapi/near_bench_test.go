package httpapi

import (
	"fmt"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// BenchmarkNearSort sorts a 10,000-node catalog read by distance, every
// node with a coordinate: the work a ?near read adds under the state's
// read lock.
func BenchmarkNearSort(b *testing.B) {
	const n = 10000
	s := model.New()
	var batch []model.Coordinate
	names := make([]string, n)
	idx := uint64(0)
	for i := range n {
		names[i] = fmt.Sprintf("node-%05d", i)
		idx++
		if res := s.Apply(idx, model.Command{Register: &model.Register{Node: names[i]}}); res.Err != nil {
			b.Fatal(res.Err)
		}
		batch = append(batch, model.Coordinate{Node: names[i], Coord: model.Coord{Vec: []float64{float64(i%97) / 1e4, float64(i%89) / 1e4, 0, 0, 0, 0, 0, 0}}})
		if len(batch) == model.MaxCoordinateBatch || i == n-1 {
			idx++
			if res := s.Apply(idx, model.Command{Coordinates: &model.CoordinateBatch{Updates: batch}}); res.Err != nil {
				b.Fatal(res.Err)
			}
			batch = nil
		}
	}
	items := make([]string, n)
	b.ReportAllocs()
	for b.Loop() {
		copy(items, names)
		sortNear(s, names[n/2], items, func(s string) string { return s })
	}
}
