package model

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Coord is a Vivaldi network coordinate as serf computes it (S89): a
// Euclidean position in seconds, the estimate's error, an adjustment and a
// height, all in seconds. Plain data, so the model needs no serf.
type Coord struct {
	Vec        []float64
	Error      float64
	Adjustment float64
	Height     float64
}

// Coordinate is one node's coordinate in one network segment. Consul keys
// coordinates by (node, segment); tenure has only the default segment "",
// but keeps the key so that the API's shape carries over.
type Coordinate struct {
	Node    string
	Segment string
	Coord   Coord
}

// CoordKey identifies a stored coordinate.
type CoordKey struct {
	Node    string
	Segment string
}

// CoordinateBatch writes coordinates the leader collected, as Consul's
// CoordinateBatchUpdate does: an update for a node the catalog does not
// have is dropped, and so is one that is not finite, so a node deregistered
// between an agent's send and the batch's apply leaves nothing behind. A
// batch moves the coordinates table's index only if it stored something.
type CoordinateBatch struct {
	Updates []Coordinate
}

// Bounds on coordinate writes: Consul's agents send 8 dimensions, and its
// servers write at most coordinate_update_batch_size (128) a batch.
const (
	MaxCoordinateDims  = 16
	MaxCoordinateBatch = 1024
)

// Valid reports whether every component is a finite number and the vector
// is within bounds: serf's IsValid plus tenure's bound on dimensions.
func (c Coord) Valid() bool {
	if len(c.Vec) == 0 || len(c.Vec) > MaxCoordinateDims {
		return false
	}
	for _, v := range c.Vec {
		if !finite(v) {
			return false
		}
	}
	return finite(c.Error) && finite(c.Adjustment) && finite(c.Height)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Distance is the estimated round trip between two coordinates in seconds,
// as Consul's ComputeDistance reckons it: the Euclidean distance of the
// vectors plus both heights, plus both adjustments unless that would make
// it non-positive, truncated to whole nanoseconds. Coordinates of different
// dimensions have no distance: +Inf, as a missing coordinate has.
func Distance(a, b Coord) float64 {
	if len(a.Vec) != len(b.Vec) {
		return math.Inf(1)
	}
	sum := 0.0
	for i := range a.Vec {
		d := a.Vec[i] - b.Vec[i]
		sum += d * d
	}
	dist := math.Sqrt(sum) + a.Height + b.Height
	if adjusted := dist + a.Adjustment + b.Adjustment; adjusted > 0 {
		dist = adjusted
	}
	return time.Duration(dist * float64(time.Second)).Seconds()
}

// coordinateBatch applies a CoordinateBatch.
func (a *applier) coordinateBatch(b CoordinateBatch) {
	if len(b.Updates) > MaxCoordinateBatch {
		a.res.Err = errorf(ErrInvalid, "coordinate batch of %d updates exceeds %d", len(b.Updates), MaxCoordinateBatch)
		return
	}
	s := a.s
	for _, u := range b.Updates {
		node := s.nodeKey(u.Node)
		if _, ok := s.nodes[node]; !ok || !u.Coord.Valid() {
			continue
		}
		s.coords[CoordKey{Node: node, Segment: u.Segment}] = Coord{
			Vec: slices.Clone(u.Coord.Vec), Error: u.Coord.Error, Adjustment: u.Coord.Adjustment, Height: u.Coord.Height,
		}
		s.tables.Coordinates = a.idx
	}
}

// deleteCoordinates drops a node's coordinates with the node, as Consul's
// node delete does.
func (a *applier) deleteCoordinates(node string) {
	for k := range a.s.coords {
		if k.Node == node {
			delete(a.s.coords, k)
			a.s.tables.Coordinates = a.idx
		}
	}
}

// CoordinateList returns every coordinate sorted by node, then segment.
func (s *State) CoordinateList() []Coordinate {
	out := make([]Coordinate, 0, len(s.coords))
	for k, c := range s.coords {
		out = append(out, Coordinate{Node: k.Node, Segment: k.Segment, Coord: c})
	}
	slices.SortFunc(out, func(x, y Coordinate) int {
		if c := strings.Compare(x.Node, y.Node); c != 0 {
			return c
		}
		return strings.Compare(x.Segment, y.Segment)
	})
	return out
}

// NodeCoordinates returns a node's coordinates by segment (the name
// compares ignoring case, S62); empty when it has none.
func (s *State) NodeCoordinates(node string) map[string]Coord {
	node = s.nodeKey(node)
	out := map[string]Coord{}
	for k, c := range s.coords {
		if k.Node == node {
			out[k.Segment] = c
		}
	}
	return out
}

// CoordinateSets groups every coordinate by node (under the catalog's
// spelling of its name), then segment: one pass, for a sort that looks up
// many nodes.
func (s *State) CoordinateSets() map[string]map[string]Coord {
	out := map[string]map[string]Coord{}
	for k, c := range s.coords {
		set := out[k.Node]
		if set == nil {
			set = map[string]Coord{}
			out[k.Node] = set
		}
		set[k.Segment] = c
	}
	return out
}

// SetDistance is the distance between two nodes' coordinate sets as
// Consul's sorts reckon it: the segment both are compared in is the only
// segment of one set (the second's winning when both have one), else the
// default segment; a set without that segment is infinitely far.
func SetDistance(a, b map[string]Coord) float64 {
	segment := ""
	if len(a) == 1 {
		for k := range a {
			segment = k
		}
	}
	if len(b) == 1 {
		for k := range b {
			segment = k
		}
	}
	ca, okA := a[segment]
	cb, okB := b[segment]
	if !okA || !okB {
		return math.Inf(1)
	}
	return Distance(ca, cb)
}

func coordEqual(a, b Coord) bool {
	return slices.Equal(a.Vec, b.Vec) && a.Error == b.Error && a.Adjustment == b.Adjustment && a.Height == b.Height
}
