package checks

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// seriesColours tell the session configurations apart; they repeat past
// eight, the legend still names each.
var seriesColours = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"}

// WriteSVG draws the trade-off table's recovery times as an SVG plot: per
// fault kind (the x axis), one series per session configuration (its check
// kind and lock-delay), a dot at the average time from the fault's end
// until the configuration's key was next acquired and a whisker up to the
// longest. Its tooltips add the counts the text table prints.
func (t *Tradeoff) WriteSVG(w io.Writer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var groups, faults []string
	top := time.Duration(0)
	for _, k := range t.sortedKeys() {
		c := t.cells[k]
		if c.Faults == 0 {
			continue // writes blamed on no fault: nothing recovered from
		}
		if !slices.Contains(groups, k[0]) {
			groups = append(groups, k[0])
		}
		if !slices.Contains(faults, k[1]) {
			faults = append(faults, k[1])
		}
		top = max(top, c.RecoveryMax)
	}
	slices.Sort(faults)
	const (
		left, right, plotTop, plotHeight = 70, 200, 40, 300
		column                           = 80
	)
	width := left + max(len(faults), 1)*column + right
	height := plotTop + plotHeight + 110
	step := yStep(top)
	ymax := step * time.Duration(max(1, int(math.Ceil(float64(top)/float64(step)))))
	y := func(d time.Duration) float64 { return plotTop + plotHeight*(1-float64(d)/float64(ymax)) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13">%s</text>`+"\n", left,
		esc(fmt.Sprintf("Time to recover: a fault's end to the next acquire of the key (%d runs; dot: average, whisker: longest)", t.runs)))
	// Axes and the y grid.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, plotTop, left, plotTop+plotHeight)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, plotTop+plotHeight, width-right, plotTop+plotHeight)
	for d := time.Duration(0); d <= ymax; d += step {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, y(d), width-right, y(d), left-6, y(d)+4, esc(fmt.Sprintf("%gs", d.Seconds())))
	}
	fmt.Fprintf(&b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">seconds</text>`+"\n", plotTop+plotHeight/2, plotTop+plotHeight/2)
	for i, f := range faults {
		x := left + i*column + column/2
		fmt.Fprintf(&b, `<text x="%d" y="%d" transform="rotate(35 %d %d)">%s</text>`+"\n", x-10, plotTop+plotHeight+16, x-10, plotTop+plotHeight+16, esc(f))
	}
	if len(faults) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no faults in these runs</text>`+"\n", left+10, plotTop+plotHeight/2)
	}
	// One group of marks per configuration, offset within each column.
	for gi, g := range groups {
		colour := seriesColours[gi%len(seriesColours)]
		fmt.Fprintf(&b, `<g class="series" data-config="%s" fill="%s" stroke="%s">`+"\n", esc(g), colour, colour)
		off := float64(column) * (0.15 + 0.7*float64(gi+1)/float64(len(groups)+1))
		for fi, f := range faults {
			c := t.cells[[2]string{g, f}]
			if c == nil || c.Recovered == 0 {
				continue
			}
			x := float64(left+fi*column) + off
			avg := c.RecoverySum / time.Duration(c.Recovered)
			tip := fmt.Sprintf("%s under %s: %d faults, recovered after %v on average, %v at most, never %d; stale %d, overlap %d, fence-rejected %d",
				g, f, c.Faults, avg.Round(100*time.Millisecond), c.RecoveryMax.Round(100*time.Millisecond), c.Never, c.Stale, c.Overlaps, c.FenceRejects)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><circle cx="%.1f" cy="%.1f" r="4"><title>%s</title></circle>`+"\n",
				x, y(avg), x, y(c.RecoveryMax), x, y(avg), esc(tip))
		}
		ly := plotTop + 10 + gi*16
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10"/><text x="%d" y="%d" stroke="none" fill="#222">%s</text>`+"\n",
			width-right+15, ly, width-right+30, ly+9, esc(g))
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("trade-off plot: %w", err)
	}
	return nil
}

// yStep is a round step for the y axis: about six lines up to top.
func yStep(top time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, time.Minute} {
		if top/s <= 6 {
			return s
		}
	}
	return 2 * time.Minute
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // a bytes.Buffer does not fail
	return b.String()
}
