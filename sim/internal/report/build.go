package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurekv/tenure/sim/internal/checks"
	"github.com/tenurekv/tenure/sim/internal/workload"
)

// buildPage gathers what the page shows from a run and its evaluation.
func buildPage(res *workload.Result, ev checks.Evaluation, replay, porcupine string, extra []checks.Span) pageData {
	tl := checks.Timeline(res.Events)
	for _, s := range extra {
		if !slices.Contains(tl.Lanes, s.Lane) {
			tl.Lanes = append(tl.Lanes, s.Lane)
		}
		tl.Spans = append(tl.Spans, s)
	}
	p := pageData{
		Seed: res.Config.Seed, Digest: res.Digest, Servers: len(res.Header.Servers), Clients: len(res.Header.Clients),
		Virtual: secs(res.Virtual), Events: len(res.Events), Replay: replay, Counts: ev.Counts,
		Lin: string(ev.Lin.Verdict), LinOps: ev.Lin.Ops, Porcupine: porcupine,
	}
	if res.Config.Variant != nil {
		p.Variant = res.Config.Variant.Name
	}
	if p.Lin == "" {
		p.Lin = "not run"
	}
	p.Faults = faultRows(tl)
	for i, v := range ev.Violations {
		p.Violated = append(p.Violated, violationRow{ID: violationID(i), Check: v.Check,
			Clauses: strings.Join(v.Clauses, ", "), At: secs(v.At), Msg: v.Msg})
	}
	p.Lanes = layout(tl, ev.Violations)
	return p
}

func violationID(i int) string { return fmt.Sprintf("v%d", i+1) }

// faultRows lists each fault once, with every lane it hit.
func faultRows(tl checks.RunTimeline) []faultRow {
	type key struct {
		start, end time.Duration
		label      string
	}
	var order []key
	targets := map[key][]string{}
	for _, s := range tl.Spans {
		if s.Kind != checks.SpanFault {
			continue
		}
		k := key{s.Start, s.End, s.Label}
		if _, ok := targets[k]; !ok {
			order = append(order, k)
		}
		targets[k] = append(targets[k], s.Lane)
	}
	var out []faultRow
	for _, k := range order {
		r := faultRow{Start: secs(k.start), End: "never healed", Length: "-", Kind: k.label,
			Targets: strings.Join(slices.Compact(targets[k]), ", ")}
		if k.end >= 0 {
			r.End, r.Length = secs(k.end), secs(k.end-k.start)
		}
		out = append(out, r)
	}
	return out
}
