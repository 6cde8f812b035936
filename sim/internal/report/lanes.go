package report

import (
	"fmt"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
)

// Geometry of the lanes' SVG, in pixels.
const (
	labelWidth = 190  // lane names, left of the plot
	plotWidth  = 1000 // the run's virtual time
	laneHeight = 24
	axisHeight = 28
)

// laneView is the lanes' SVG, laid out: one row per lane, a bar per fault,
// leadership and lock tenure, a mark per election and invalidation, and a
// line across every lane at each violation.
type laneView struct {
	Width, Height int
	Ticks         []tick
	Rows          []row
	Shapes        []shape
	Violations    []violationMark
}

type tick struct {
	X     float64
	Label string
}

type row struct {
	Name  string
	Y     int
	TextY int
	Odd   bool
}

type shape struct {
	Class      string
	X, Y, W, H float64
	Title      string
}

type violationMark struct {
	ID    string
	N     int
	X     float64
	Y     int
	Title string
}

// violationsLane is the top row, where each violation's number sits.
const violationsLane = "violations"

func layout(tl checks.RunTimeline, vs []checks.Violation) laneView {
	end := tl.End
	for _, v := range vs {
		end = max(end, v.At)
	}
	if end <= 0 {
		end = time.Second
	}
	x := func(t time.Duration) float64 {
		return labelWidth + float64(plotWidth)*float64(t)/float64(end)
	}
	lanes := append([]string{violationsLane}, tl.Lanes...)
	yOf := map[string]int{}
	v := laneView{Width: labelWidth + plotWidth + 20, Height: axisHeight + len(lanes)*laneHeight + 4}
	for i, name := range lanes {
		y := axisHeight + i*laneHeight
		yOf[name] = y
		v.Rows = append(v.Rows, row{Name: name, Y: y, TextY: y + laneHeight/2 + 4, Odd: i%2 == 1})
	}
	step := tickStep(end)
	for t := time.Duration(0); t <= end; t += step {
		v.Ticks = append(v.Ticks, tick{X: x(t), Label: fmt.Sprintf("%gs", t.Seconds())})
	}
	for _, s := range tl.Spans {
		y := float64(yOf[s.Lane])
		stop := s.End
		if stop < 0 {
			stop = tl.End
		}
		sh := shape{Class: s.Kind, X: x(s.Start), W: max(x(stop)-x(s.Start), 1), Title: spanTitle(s)}
		switch s.Kind {
		case checks.SpanFault:
			sh.Y, sh.H = y+1, laneHeight-2
		case checks.SpanLeader:
			sh.Y, sh.H = y+laneHeight-7, 5
		case checks.SpanTenure:
			sh.Y, sh.H = y+7, 10
		case checks.SpanBelief:
			sh.Y, sh.H = y+4, 16
		default: // a mark: election, invalidation
			sh.X, sh.W, sh.Y, sh.H = x(s.Start)-1.5, 3, y+2, laneHeight-4
		}
		v.Shapes = append(v.Shapes, sh)
	}
	for i, viol := range vs {
		v.Violations = append(v.Violations, violationMark{ID: violationID(i), N: i + 1, X: x(viol.At), Y: yOf[violationsLane],
			Title: fmt.Sprintf("%s at %s: %s", viol.Check, secs(viol.At), viol.Msg)})
	}
	return v
}

// tickStep is a round step that puts about ten ticks on the axis.
func tickStep(end time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
		15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute} {
		if end/s <= 12 {
			return s
		}
	}
	return 10 * time.Minute
}

// spanTitle is a span's tooltip: what it is and when.
func spanTitle(s checks.Span) string {
	switch {
	case s.End < 0:
		return fmt.Sprintf("%s: %s from %s to the end", s.Lane, s.Label, secs(s.Start))
	case s.End == s.Start:
		return fmt.Sprintf("%s: %s at %s", s.Lane, s.Label, secs(s.Start))
	}
	return fmt.Sprintf("%s: %s %s–%s", s.Lane, s.Label, secs(s.Start), secs(s.End))
}
