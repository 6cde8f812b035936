package gossip

import (
	"fmt"

	"github.com/tenurekv/tenure/model"
)

// Coordinate is this member's Vivaldi network coordinate, which serf
// updates from every probe's round trip (S89). It fails when the pool
// keeps no coordinates.
func (p *Pool) Coordinate() (model.Coord, error) {
	c, err := p.serf.GetCoordinate()
	if err != nil {
		return model.Coord{}, fmt.Errorf("gossip coordinate: %w", err)
	}
	return model.Coord{Vec: append([]float64(nil), c.Vec...), Error: c.Error, Adjustment: c.Adjustment, Height: c.Height}, nil
}
