package server

import (
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestMovedCoordinates: the leader writes a node's first coordinate and
// one that moved at least CoordinateMoveThreshold, and skips one that
// barely moved and one for a node the catalog lacks (S89), in node order.
func TestMovedCoordinates(t *testing.T) {
	st := model.New()
	for i, n := range []string{"a", "b", "c", "d"} {
		if res := st.Apply(uint64(i+1), model.Command{Register: &model.Register{Node: n}}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	at := func(node string, x, h float64) model.Coordinate {
		return model.Coordinate{Node: node, Coord: model.Coord{Vec: []float64{x, 0}, Error: 1.5, Height: h}}
	}
	res := st.Apply(5, model.Command{Coordinates: &model.CoordinateBatch{Updates: []model.Coordinate{
		at("a", 0, 1e-5), at("b", 0, 1e-5), at("c", 0, 1e-5)}}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	pending := map[model.CoordKey]model.Coordinate{}
	for _, u := range []model.Coordinate{
		at("c", CoordinateMoveThreshold/2, 1e-5),              // barely moved: skipped
		at("b", CoordinateMoveThreshold*2, 1e-5),              // moved: written
		at("a", 0, 1e-5+CoordinateMoveThreshold),              // height moved: written
		at("d", 0, 0),                                         // first one: written
		at("ghost", 1, 0),                                     // no such node: skipped
		{Node: "c", Segment: "x", Coord: at("c", 0, 0).Coord}, // another segment: first one
	} {
		pending[model.CoordKey{Node: u.Node, Segment: u.Segment}] = u
	}
	var got []string
	for _, u := range movedCoordinates(st, pending) {
		got = append(got, u.Node+"/"+u.Segment)
	}
	want := []string{"a/", "b/", "c/x", "d/"}
	if len(got) != len(want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("written %v, want %v", got, want)
		}
	}
	if coordShift(model.Coord{Vec: []float64{0}}, model.Coord{Vec: []float64{0, 0}}) < CoordinateMoveThreshold {
		t.Fatal("a change of dimensions counts as no move")
	}
}
