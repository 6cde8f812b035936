package model_test

import (
	"math"
	"strings"
	"testing"

	"github.com/tenurekv/tenure/model"
)

// TestRestoreRefusesNonFiniteCoordinate: a snapshot is input, and a NaN
// coordinate would poison every distance sort (S89).
func TestRestoreRefusesNonFiniteCoordinate(t *testing.T) {
	s := model.New()
	if res := s.Apply(1, model.Command{Register: &model.Register{Node: "n1"}}); res.Err != nil {
		t.Fatal(res.Err)
	}
	for name, c := range map[string]model.Coord{
		"NaN":   {Vec: []float64{math.NaN()}},
		"Inf":   {Vec: []float64{0}, Height: math.Inf(1)},
		"empty": {},
		"wide":  {Vec: make([]float64, model.MaxCoordinateDims+1)},
	} {
		snap := s.Snapshot()
		snap.Coordinates = map[model.CoordKey]model.Coord{{Node: "n1"}: c}
		if _, err := model.Restore(snap); err == nil || !strings.Contains(err.Error(), "coordinate") {
			t.Errorf("%s: Restore = %v, want a coordinate error", name, err)
		}
	}
	snap := s.Snapshot()
	snap.Coordinates = map[model.CoordKey]model.Coord{{Node: "n1"}: {Vec: []float64{0.001}}}
	if _, err := model.Restore(snap); err != nil {
		t.Fatalf("a finite coordinate: %v", err)
	}
}

// TestCoordinateBatchBound: a batch above the bound is refused whole and
// changes nothing.
func TestCoordinateBatchBound(t *testing.T) {
	s := model.New()
	s.Apply(1, model.Command{Register: &model.Register{Node: "n1"}})
	before := s.Clone()
	b := model.CoordinateBatch{Updates: make([]model.Coordinate, model.MaxCoordinateBatch+1)}
	for i := range b.Updates {
		b.Updates[i] = model.Coordinate{Node: "n1", Coord: model.Coord{Vec: []float64{0}}}
	}
	res := s.Apply(2, model.Command{Coordinates: &b})
	if res.Err == nil || res.Err.Kind != model.ErrInvalid {
		t.Fatalf("oversized batch: %+v, want ErrInvalid", res.Err)
	}
	if !s.Equal(before) {
		t.Fatal("a refused batch changed the state")
	}
}

// TestCoordinateHashAndEqual: a coordinate is part of the state's identity,
// and a state without any hashes as before coordinates existed.
func TestCoordinateHashAndEqual(t *testing.T) {
	a := model.New()
	a.Apply(1, model.Command{Register: &model.Register{Node: "n1"}})
	b := a.Clone()
	plain := a.Hash()
	up := func(s *model.State, v float64) {
		s.Apply(2, model.Command{Coordinates: &model.CoordinateBatch{Updates: []model.Coordinate{{Node: "n1", Coord: model.Coord{Vec: []float64{v}}}}}})
	}
	up(a, 0.001)
	up(b, 0.002)
	if a.Equal(b) || a.Hash() == b.Hash() {
		t.Fatal("states with different coordinates compare or hash equal")
	}
	if a.Hash() == plain {
		t.Fatal("a stored coordinate did not change the hash")
	}
	c := a.Clone()
	if !c.Equal(a) || c.Hash() != a.Hash() {
		t.Fatal("a clone differs")
	}
}
