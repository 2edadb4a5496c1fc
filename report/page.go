package report

// pageHTML is report.html's template: one self-contained page (inline CSS
// and SVG; no script, font or other request). Figures with a glossary
// entry link to it; every number is formatted in Go (num, pct).
const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>psrlcb report {{.Run.RunID}}</title>
<style>
*{box-sizing:border-box}
body{font-family:` + pageFonts + `;max-width:1180px;margin:1.5em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
nav{font-size:.9em;margin:.5em 0 1em} nav a{margin-right:1em}
a{color:#0a5aa4}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5em 0}
td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{font-weight:600;background:#fafafa}
th.grp{background:none;padding-top:.9em;color:#555;font-weight:600}
td a,th a{text-decoration:none;border-bottom:1px dotted #0a5aa4}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.verdict{background:#f5f7fa;border-left:4px solid #4a78c2;padding:.3em 1em}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(480px,100%),1fr));gap:1em 2em}
figure{margin:1em 0;min-width:0} figcaption{font-weight:600;margin-bottom:.3em}
figure svg{max-width:100%;height:auto;display:block}
figure p{font-size:.9em;color:#444;margin:.3em 0}
.legend{font-size:.85em;margin:.2em 0}
.legend span{display:inline-block;margin-right:1.2em;white-space:nowrap}
.sw{display:inline-block;width:1.4em;height:.25em;vertical-align:middle;margin-right:.4em}
.dot{display:inline-block;width:.6em;height:.6em;border-radius:50%;vertical-align:middle;margin-right:.4em}
.pol td{font-size:.92em;padding:.25em .45em}
.pol .hist,.pol .act{white-space:nowrap}
.pol .act .muted{display:block;font-size:.85em}
.pol .pre{color:#888;font-size:.9em}
.pol tr.dep{background:#fff6e5}
.muted{color:#666;font-size:.9em}
dl.gloss dt{font-weight:600;margin-top:.6em} dl.gloss dd{margin:.1em 0 0 1.5em}
dl.gloss dt:target,dl.gloss dt:target+dd{background:#fff6d6}
code{overflow-wrap:anywhere}
</style></head><body>
<h1>psrlcb: policy from logged trajectories</h1>
<p>Run <code>{{.Run.RunID}}</code>: {{.Summary}}</p>
<nav><a href="#verdict">verdict</a><a href="#headline">headline</a>{{if .Compare}}<a href="#behaviour">compared with the behaviour</a>{{end}}{{if .Compared}}<a href="#compared">compared policies</a>{{end}}{{if .Policy}}<a href="#policy">policy</a>{{end}}<a href="#evidence">plots</a>{{if .Run.Alphas}}<a href="#alpha">α candidates</a>{{end}}<a href="#glossary">glossary</a><a href="#parameters">parameters</a></nav>

<h2 id="verdict">Verdict</h2>
<div class="verdict">{{range .Verdict}}<p>{{.}}</p>{{end}}</div>

<h2 id="headline">Headline figures</h2>
<div class="scroll"><table>
<tr><th>figure</th><th class="n">value</th><th class="n"><a href="#g-scale">[0,1] scale</a></th></tr>
{{range .Head}}{{if .Group}}<tr><th colspan="3" class="grp">{{.Group}}</th></tr>{{end}}<tr><td><a href="#{{.Term}}">{{.Label}}</a></td><td class="n">{{.Units}}</td><td class="n">{{.Scaled}}</td></tr>
{{end}}</table></div>
<p class="muted">Each name links to its definition in the <a href="#glossary">glossary</a>.</p>

{{if .Compare}}<h2 id="behaviour">Compared with the behaviour</h2>
{{range .Compare}}<p>{{.}}</p>{{end}}{{if .Departures}}<ul>{{range .Departures}}<li>{{.}}</li>{{end}}</ul>{{end}}{{end}}

{{if .Compared}}<h2 id="compared">Compared policies</h2>
<p>The policies given to <code>--compare</code>, beside this run's, each estimated from these logs in your units of return: the estimate the summary of <code>psrlcb evaluate --logs</code> would lead with (with its 95% interval), this run's fitted model's value of the policy and its lower bound with the run's bonus at the planning α. The doubly robust estimators are left out (they fit a model on each half of the logs): <code>psrlcb evaluate --logs</code> runs them. Every estimator is in <a href="compared.arrow"><code>compared.arrow</code></a>.</p>
<div class="scroll"><table>
<tr><th>policy</th><th>estimated from the logs</th><th class="n">model's value</th><th class="n">model's lower bound</th><th class="n">effective sample size</th></tr>
{{range .Compared}}<tr><td><code>{{.Policy}}</code></td><td>{{.Estimate}}</td><td class="n">{{.Model}}</td><td class="n">{{.Bound}}</td><td class="n">{{.ESS}}</td></tr>
{{end}}</table></div>{{end}}

{{if .Policy}}<h2 id="policy">The policy</h2>
<p>The decision tree of π̄: on seeing the observation, after the history that leads to its row (the rows above it, one indent less), take the action. Listed: {{.PolicyOf}}, each under its parent; every node is in <a href="policy.arrow"><code>policy.arrow</code></a> (also <code>psrlcb inspect DIR --policy</code>). Reach is the share of episodes that get there: under the model when following π̄, and in the logs (with the number of episodes) when the behaviour happened to follow π̄ up to there; "logs take this action" is the share of those logged episodes that then took the policy's action. V<sub>R</sub> is the expected return to go from that step and V<sub>b</sub> the expected bonus of the whole episode given the node, both in your units; LCB = V<sub>R</sub> − V<sub>b</sub>{{.AlphaNote}}.{{if .Stochastic}} The policy is stochastic: the rows with the same observation after the same history are the actions it may take there, each with the probability it takes it, and the rows below each continue the history with that action.{{end}}{{if .Logs}} Highlighted rows take another action than one the logs clearly favour there (see <a href="#behaviour">compared with the behaviour</a>).{{end}}</p>
<div class="scroll"><table class="pol">
<tr><th class="n">step</th><th>observation</th><th>action</th>{{if .Stochastic}}<th class="n">probability</th>{{end}}<th class="n"><a href="#g-reach">reach</a><br>model</th>{{if .Logs}}<th class="n">reach<br>logs</th><th class="n">logs take<br>this action</th>{{end}}<th class="n"><a href="#g-vr">V<sub>R</sub></a></th><th class="n"><a href="#g-vb">V<sub>b</sub></a></th><th class="n"><a href="#g-lcb">LCB</a></th></tr>
{{range .Policy}}<tr{{if .Departs}} class="dep"{{end}}><td class="n">{{.Step}}</td><td class="hist" style="padding-left:{{.IndentPx}}px">{{if .Prefix}}<span class="pre">{{.Prefix}}</span> {{end}}<b>{{.Obs}}</b></td><td class="act">{{.Action}}{{if .Departs}} <span class="muted">logs: {{.MostLogged}}</span>{{end}}</td>{{if $.Stochastic}}<td class="n">{{.Prob}}</td>{{end}}<td class="n">{{.Reach}}</td>{{if $.Logs}}<td class="n">{{.Logged}} <span class="muted">({{.LoggedEpisode}})</span></td><td class="n">{{.ActShare}}</td>{{end}}<td class="n">{{.Value}}</td><td class="n">{{.Bonus}}</td><td class="n">{{.LCB}}</td></tr>
{{end}}</table></div>{{end}}

<h2 id="evidence">Plots</h2>
<div class="figs">{{range .Figures}}<figure id="{{.ID}}"><figcaption>{{.Title}}</figcaption>{{.SVG}}
{{if .Legend}}<div class="legend">{{range .Legend}}<span>{{if .Marker}}<i class="dot" style="background:{{.Color}}"></i>{{else}}<i class="sw" style="background:{{.Color}}"></i>{{end}}{{.Label}}</span>{{end}}</div>{{end}}
{{if .Caption}}<p>{{.Caption}}</p>{{end}}</figure>
{{end}}</div>

{{if .Run.Alphas}}<h2 id="alpha">α candidates</h2>
<p class="muted">Values on the <a href="#g-scale">[0,1] scale</a>; the importance-weighted (IW) figures are on the held-out episodes.</p>
<div class="scroll"><table><tr><th class="n"><a href="#g-alpha">α</a></th><th class="n">V<sub>R</sub></th><th class="n">V<sub>b</sub></th><th class="n">LCB</th><th class="n"><a href="#g-iw">IW</a> [95%]</th><th class="n"><a href="#g-ess">ESS</a></th><th class="n"><a href="#g-cinf">C∞</a></th><th></th></tr>
{{range .Run.Alphas}}<tr><td class="n">{{num .Alpha 3}}</td><td class="n">{{num .ValueReward 4}}</td><td class="n">{{num .ValueBonus 3}}</td><td class="n">{{num .LCB 4}}</td><td class="n">{{num .IW 4}} [{{num .IWLo 3}}, {{num .IWHi 3}}]</td><td class="n">{{num .ESS 3}}</td><td class="n">{{num .CInf 3}}</td><td>{{if .Chosen}}chosen{{end}}</td></tr>
{{end}}</table></div>{{end}}

{{if .Quarantined}}<h2 id="quarantined">Quarantined episodes</h2>
{{if .QuarantinedMore}}<p class="muted">The first {{len .Quarantined}} of {{len .Run.Manifest.Quarantined}}; manifest.json lists all.</p>{{end}}
<div class="scroll"><table><tr><th>episode</th><th>file</th><th class="n">step</th><th>reason</th></tr>
{{range .Quarantined}}<tr><td>{{.EpisodeID}}</td><td>{{.File}}</td><td class="n">{{.Step}}</td><td>{{.Reason}}</td></tr>{{end}}</table></div>{{end}}

{{if .Run.Manifest.Notes}}<h2 id="notes">Notes</h2><ul>{{range .Run.Manifest.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2 id="glossary">Glossary</h2>
<dl class="gloss">{{range .Glossary}}<dt id="{{.ID}}">{{.Term}}</dt><dd>{{.Text}}</dd>
{{end}}</dl>

<h2 id="parameters">Parameters</h2>
<div class="scroll"><table>{{range .Params}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>{{end}}</table></div>
<h2 id="stages">Stage times</h2>
<table>{{range .Stages}}<tr><td>{{index . 0}}</td><td class="n">{{index . 1}}</td></tr>{{end}}</table>
<p><small>{{.Run.Manifest.Tool}} {{.Run.Manifest.Version}}, {{.Run.Manifest.GoVersion}}</small></p>
</body></html>
`
