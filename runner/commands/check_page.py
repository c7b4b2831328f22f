"""The page of ``stanjax check``: OUT/check.html for a verdict, a check stopped in its runs, and a check refused for
its input (exit 2); the verb (:mod:`stanjax.runner.commands.check`) fills it."""

from __future__ import annotations

from pathlib import Path

import jinja2

from stanjax.runner.pairing.speed_advice import figure

PAGES = jinja2.Environment(autoescape=True)
HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>stanjax check: {{ spec_id }}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { padding: .3rem .7rem; border-bottom: 1px solid #ddd; }
th { text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #17692b; font-weight: 600; } .fail { color: #b00020; font-weight: 600; } code { font-size: 90%; }
</style></head><body>
<h1>stanjax check: <code>{{ spec_id }}</code></h1>
"""
# The page of a check refused for its input once it held its folder (exit 2): what was found, and how to run it again.
REFUSED = PAGES.from_string(
    HEAD
    + """<p>Verdict: <span class="fail">PROBLEM WITH THE INPUT</span> (exit 2): found before the check could go on,
so no verdict on the posterior.</p>
<ul>{% for line in lines %}<li>{{ line }}</li>{% endfor %}</ul>
<p><small>Made by <code>{{ command }}</code>.</small></p>
</body></html>
"""
)
HTML = PAGES.from_string(
    HEAD
    + """
<p>{{ spec.description.rstrip('.') }}. Stan: <code>{{ spec.stan_file }}</code>;
NumPyro: <code>{{ spec.jax_file }}</code>; size <code>{{ size }}</code>, data seed {{ seed }}. Verdict:
<span class="{{ 'pass' if passed else 'fail' }}">{{ headline }}</span>.</p>
{% if advice %}<ul>{% for line in advice %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}
<table><tr><th>stage</th><th>verdict</th><th>what was found</th><th>seconds</th></tr>
{% for stage in stages %}<tr><td>{{ stage.name }}</td>
<td class="{{ 'pass' if stage.ok else 'fail' }}">{{ 'ok' if stage.ok else 'FAIL' }}</td>
<td>{{ stage.line }}{% for note in stage.notes %}<br>note: {{ note }}{% endfor %}</td>
<td class="n">{{ '%.1f' % stage.seconds }}</td></tr>{% endfor %}</table>
{% if rows %}
<h2>Short run</h2>
<p>{{ settings }}. ESS/s, ESS per 1000 gradients and ms per gradient are medians over an engine's runs; min bulk
ESS (the lowest over parameters) and max R-hat are its worst run's, as the gates judge each run; divergences summed
over its runs.</p>
<table><tr><th>engine</th><th>valid runs</th><th>ESS/s</th><th>ESS / 1000 gradients</th><th>ms / gradient</th>
<th>min bulk ESS</th><th>max R-hat</th><th>divergences</th><th>compile s</th><th>failed</th></tr>
{% for r in rows %}<tr><td>{{ r.engine }}</td><td class="n">{{ r.valid }} / {{ r.runs }}</td>
<td class="n">{{ figure(r.ess_per_s) }}</td><td class="n">{{ figure(r.ess_per_1000_gradients) }}</td>
<td class="n">{{ figure(r.ms_per_gradient) }}</td><td class="n">{{ '%.0f' % r.min_ess_bulk }}</td>
<td class="n">{{ '%.3f' % r.max_rhat }}</td><td class="n">{{ r.divergences }}</td>
<td class="n">{{ '%.1f' % r.compile_s }}</td><td>{{ r.failed | join(', ') }}</td></tr>{% endfor %}</table>
<p>Speed: {{ speed }}.</p>
{% if speed_advice %}<ul>{% for line in speed_advice %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}
<p>Engines agree: {{ agrees }}.</p>
<h2>Parameters</h2>
<p>Each engine's mean and sd over its runs; z: the difference of the means over their combined MCSE (largest |z|
first).</p>
{% set with_reference = parameters | selectattr('reference') | list %}
<table><tr><th>parameter</th><th>Stan mean</th><th>Stan sd</th><th>NumPyro mean</th><th>NumPyro sd</th><th>z</th>
{% if with_reference %}<th>reference mean</th><th>reference sd</th>{% endif %}</tr>
{% for p in parameters %}<tr><td>{{ p.parameter }}</td><td class="n">{{ figure(p.stan.mean) }}</td>
<td class="n">{{ figure(p.stan.sd) }}</td><td class="n">{{ figure(p.numpyro.mean) }}</td>
<td class="n">{{ figure(p.numpyro.sd) }}</td><td class="n">{{ '%.2f' % p.z }}</td>
{% if with_reference %}{% if p.reference %}<td class="n">{{ figure(p.reference.mean) }}</td>
<td class="n">{{ figure(p.reference.sd) }}</td>{% else %}<td></td><td></td>{% endif %}{% endif %}</tr>
{% endfor %}</table>
{% endif %}
<p><small>Made by <code>{{ command }}</code>; records in <code>{{ records }}</code>.</small></p>
</body></html>
"""
)


def write_page(out: Path, report: dict, headline: str, passed: bool) -> Path:
    """``out``/check.html: the stages, the short run's tables and the parameters, under ``headline``."""
    out.mkdir(parents=True, exist_ok=True)
    page = out / "check.html"
    page.write_text(HTML.render(headline=headline, passed=passed, figure=figure, **report))
    return page


def write_refused(out: Path, spec_id: str, lines: list[str], command: str) -> None:
    """``out``/check.html of a check refused for its input: what was found, one item a line, and how to run it again."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "check.html").write_text(REFUSED.render(spec_id=spec_id, lines=lines, command=command))
