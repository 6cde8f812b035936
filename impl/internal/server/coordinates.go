package server

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenurekv/tenure/model"
)

// CoordinateQueue is what a Backend that batches network coordinates
// offers PUT /v1/coordinate/update (S89): an optional capability, as
// KeyWatcher is. QueueCoordinate takes one update on the leader
// (ErrNotLeader elsewhere) and returns at once; the leader writes what it
// collected through raft a period later, as Consul's servers do.
type CoordinateQueue interface {
	QueueCoordinate(u model.Coordinate) error
}

var _ CoordinateQueue = (*Server)(nil)

// Consul's server defaults (coordinate_update_period, _batch_size and
// _max_batches): one flush every 5 s, at most 128 × 5 updates a flush.
const (
	defaultCoordinatePeriod = 5 * time.Second
	coordinateBatchSize     = 128
	coordinateMaxBatches    = 5
)

// CoordinateMoveThreshold is how far (in seconds, the Vivaldi vector's
// Euclidean shift plus the changes of height and adjustment) a node's
// coordinate must move from the stored one before the leader writes it
// again. Consul writes every update; tenure skips the ones that barely
// moved, so a cluster whose round trips hold steady stops writing (S89,
// DESIGN.md "Decisions"). 100 µs keeps sorting meaningful on a LAN.
const CoordinateMoveThreshold = 100e-6

// coordQueue is the leader's pending updates: the newest per node and
// segment, bounded by what one flush may write. Updates beyond the bound
// are dropped, as Consul drops those past its limit at flush time.
type coordQueue struct {
	mu      sync.Mutex
	pending map[model.CoordKey]model.Coordinate
	armed   bool // a flush is scheduled
	dropped int
}

// QueueCoordinate implements CoordinateQueue. A flush is scheduled only
// when something is pending, so a cluster whose agents send nothing (the
// simulator's, or one with disable_coordinates) runs no timer for it.
func (s *Server) QueueCoordinate(u model.Coordinate) error {
	if s.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	q := &s.coords
	q.mu.Lock()
	defer q.mu.Unlock()
	key := model.CoordKey{Node: u.Node, Segment: u.Segment}
	if _, ok := q.pending[key]; !ok && len(q.pending) >= coordinateBatchSize*coordinateMaxBatches {
		q.dropped++
		return nil
	}
	if q.pending == nil {
		q.pending = map[model.CoordKey]model.Coordinate{}
	}
	q.pending[key] = u
	if !q.armed {
		q.armed = s.goTracked(s.flushCoordinates)
	}
	return nil
}

// flushCoordinates waits one period, then writes what is pending and has
// moved, in batches.
func (s *Server) flushCoordinates() {
	period := s.cfg.CoordinateUpdatePeriod
	if period <= 0 {
		period = defaultCoordinatePeriod
	}
	// Flushes fall on multiples of the period, as Consul's run on a
	// fixed cadence, so an update waits up to one period, not always a
	// whole one.
	wait := period - time.Duration(s.clock.Now().UnixNano()%int64(period))
	if !s.sleep(wait, s.shutdownCh) {
		return
	}
	q := &s.coords
	q.mu.Lock()
	pending, dropped := q.pending, q.dropped
	q.pending, q.dropped, q.armed = nil, 0, false
	q.mu.Unlock()
	if dropped > 0 {
		s.logger.Warn("discarded coordinate updates", "number_discarded", dropped)
	}
	var updates []model.Coordinate
	s.fsm.Read(func(st *model.State) { updates = movedCoordinates(st, pending) })
	for start := 0; start < len(updates); start += coordinateBatchSize {
		batch := updates[start:min(start+coordinateBatchSize, len(updates))]
		ctx, cancel := context.WithTimeout(context.Background(), proposeTimeout)
		_, err := s.Apply(ctx, model.Command{Coordinates: &model.CoordinateBatch{Updates: batch}})
		cancel()
		if err != nil {
			// Agents send again within a minute; no retry is needed.
			s.logger.Warn("coordinate batch not applied", "updates", len(batch), "error", err)
			return
		}
	}
}

// movedCoordinates lists, sorted by node and segment (so every run writes
// the same entries), the pending updates of nodes the catalog has whose
// coordinate is new or moved at least CoordinateMoveThreshold.
func movedCoordinates(st *model.State, pending map[model.CoordKey]model.Coordinate) []model.Coordinate {
	var out []model.Coordinate
	for _, u := range pending {
		if _, ok := st.Node(u.Node); !ok {
			continue
		}
		old, ok := st.NodeCoordinates(u.Node)[u.Segment]
		if ok && coordShift(old, u.Coord) < CoordinateMoveThreshold {
			continue
		}
		out = append(out, u)
	}
	sortCoordinates(out)
	return out
}

// coordShift is how far c moved from old; a change of dimensions is
// always far.
func coordShift(old, c model.Coord) float64 {
	if len(old.Vec) != len(c.Vec) {
		return math.Inf(1)
	}
	sum := 0.0
	for i := range old.Vec {
		d := c.Vec[i] - old.Vec[i]
		sum += d * d
	}
	return math.Sqrt(sum) + math.Abs(c.Height-old.Height) + math.Abs(c.Adjustment-old.Adjustment)
}

func sortCoordinates(cs []model.Coordinate) {
	slices.SortFunc(cs, func(a, b model.Coordinate) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return strings.Compare(a.Segment, b.Segment)
	})
}
