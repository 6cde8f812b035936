package model_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/tenurekv/tenure/model"
)

// parseCoordinates reads `coordinates NODE=(v1,v2,…) …`: one update per
// argument, in order, with serf's starting Error and no adjustment; an
// argument `height=H` sets every update's height. A node written
// `NODE/SEGMENT` names a segment.
func parseCoordinates(d *datadriven.TestData) (model.Command, error) {
	height := 0.0
	if h := arg(d, "height"); h != "" {
		v, err := strconv.ParseFloat(h, 64)
		if err != nil {
			return model.Command{}, fmt.Errorf("height: %w", err)
		}
		height = v
	}
	var b model.CoordinateBatch
	for _, a := range d.CmdArgs {
		if a.Key == "height" {
			continue
		}
		node, segment, _ := strings.Cut(a.Key, "/")
		u := model.Coordinate{Node: node, Segment: segment, Coord: model.Coord{Error: 1.5, Height: height}}
		for _, v := range a.Vals {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return model.Command{}, fmt.Errorf("coordinate of %s: %w", a.Key, err)
			}
			u.Coord.Vec = append(u.Coord.Vec, f)
		}
		b.Updates = append(b.Updates, u)
	}
	return model.Command{Coordinates: &b}, nil
}

// fmtCoords lists the stored coordinates and the table's index.
func fmtCoords(s *model.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "index %d\n", s.Tables().Coordinates)
	for _, c := range s.CoordinateList() {
		fmt.Fprintf(&b, "%s/%s vec=%v height=%v\n", c.Node, c.Segment, c.Coord.Vec, c.Coord.Height)
	}
	return b.String()
}
