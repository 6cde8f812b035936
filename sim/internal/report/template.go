package report

// pageTemplate is the report page. Every section has an id a test (and a
// reader's link) can find: summary, checks, faults, lanes, violations,
// linearizability.
const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tenure sim: seed {{.Seed}}{{if .Violated}}, {{len .Violated}} violations{{end}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.idle td { color: #a60; } tr.failed td { color: #b00; font-weight: bold; }
code { background: #f4f4f4; padding: 1px 4px; }
.lanes { overflow-x: auto; }
svg text { font: 11px sans-serif; }
svg .band { fill: #f7f7f7; }
svg .fault { fill: #f2a6a6; fill-opacity: 0.7; }
svg .leader { fill: #3a9d4a; }
svg .tenure { fill: #4a78c2; }
svg .belief { fill: #8e5cc4; fill-opacity: 0.6; }
svg .election { fill: #1d6e2b; }
svg .invalidation { fill: #e07b00; }
svg .violation { stroke: #d00; stroke-width: 2; }
svg .vlabel { fill: #d00; } svg .vnum { fill: #fff; font-weight: bold; }
svg .axis { stroke: #ccc; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
li.violation:target { background: #fdd; }
iframe { width: 100%; height: 800px; border: 1px solid #ccc; }
</style>
</head>
<body>
<h1>tenure simulator: seed {{.Seed}}</h1>

<section id="summary">
<h2>Summary</h2>
<table>
<tr><th>seed</th><td>{{.Seed}}</td></tr>
<tr><th>trace digest</th><td><code>{{.Digest}}</code></td></tr>
{{if .Variant}}<tr><th>broken server</th><td>{{.Variant}}</td></tr>{{end}}
<tr><th>cluster</th><td>{{.Servers}} servers, {{.Clients}} clients</td></tr>
<tr><th>virtual time</th><td>{{.Virtual}} ({{.Events}} events)</td></tr>
<tr><th>violations</th><td>{{len .Violated}}</td></tr>
<tr><th>linearizability</th><td>{{.Lin}} ({{.LinOps}} operations)</td></tr>
{{if .Replay}}<tr><th>replay</th><td><code>{{.Replay}}</code></td></tr>{{end}}
</table>
</section>

<section id="checks">
<h2>Checks and what each judged</h2>
<table>
<tr><th>check</th><th>observations</th><th>of what</th><th>violations</th></tr>
{{range .Counts}}<tr class="{{if .Violations}}failed{{else if eq .N 0}}idle{{end}}"><td>{{.Check}}</td><td class="n">{{.N}}</td><td>{{.Unit}}{{if eq .N 0}} (not exercised){{end}}</td><td class="n">{{.Violations}}</td></tr>
{{end}}</table>
</section>

<section id="faults">
<h2>Faults injected</h2>
{{if .Faults}}<table>
<tr><th>start</th><th>end</th><th>length</th><th>fault</th><th>on</th></tr>
{{range .Faults}}<tr><td class="n">{{.Start}}</td><td class="n">{{.End}}</td><td class="n">{{.Length}}</td><td>{{.Kind}}</td><td>{{.Targets}}</td></tr>
{{end}}</table>{{else}}<p>No faults.</p>{{end}}
</section>

<section id="lanes">
<h2>Timeline per server and client</h2>
<p class="legend"><span><i style="background:#f2a6a6"></i>fault</span><span><i style="background:#3a9d4a"></i>leader</span><span><i style="background:#4a78c2"></i>lock tenure</span><span><i style="background:#8e5cc4"></i>a process's belief</span><span><i style="background:#1d6e2b;width:3px"></i>election</span><span><i style="background:#e07b00;width:3px"></i>invalidation</span><span><i style="background:#d00;width:3px"></i>violation (numbered as below)</span></p>
<div class="lanes">
{{with .Lanes}}<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Rows}}{{if .Odd}}<rect class="band" x="0" y="{{.Y}}" width="100%" height="24"/>{{end}}<text x="4" y="{{.TextY}}">{{.Name}}</text>
{{end}}{{range .Ticks}}<line class="axis" x1="{{.X}}" y1="14" x2="{{.X}}" y2="100%"/><text x="{{.X}}" y="12" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Shapes}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Violations}}<g class="violation-mark" id="mark-{{.ID}}"><line class="violation" x1="{{.X}}" y1="{{.Y}}" x2="{{.X}}" y2="100%"><title>{{.Title}}</title></line><a href="#{{.ID}}"><circle class="vlabel" cx="{{.X}}" cy="{{.Y}}" r="8" transform="translate(0 12)"><title>{{.Title}}</title></circle><text class="vnum" x="{{.X}}" y="{{.Y}}" dy="16" text-anchor="middle">{{.N}}</text></a></g>
{{end}}</svg>{{end}}
</div>
</section>

<section id="violations">
<h2>Violations</h2>
{{if .Violated}}<ol>
{{range .Violated}}<li class="violation" id="{{.ID}}" data-check="{{.Check}}"><b>{{.Check}}</b> ({{.Clauses}}) at {{.At}}: {{.Msg}}</li>
{{end}}</ol>{{else}}<p>None.</p>{{end}}
</section>

<section id="linearizability">
<h2>Linearizability</h2>
<p>Verdict: {{.Lin}} over {{.LinOps}} operations. Porcupine's visualisation of the history, the faults drawn on it:</p>
{{if .Porcupine}}<iframe title="porcupine" sandbox="allow-scripts" srcdoc="{{.Porcupine}}"></iframe>{{else}}<p>No visualisation was written (the history could not be read).</p>{{end}}
</section>
</body>
</html>
`
