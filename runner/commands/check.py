"""``stanjax check``: are a Stan program and a NumPyro model the same posterior, and which one samples it faster?

The stages are :mod:`stanjax.runner.pairing.check`'s, the verdicts :mod:`stanjax.runner.pairing.check_verdicts`'s; this verb parses the
options, prints each stage as it ends, and writes ``OUT/check.html``. Exit codes: 0 *same posterior*, 1 *different
posterior*, 3 *sampling failed*, 2 a problem with the input found before anything runs (or a static or density
stage that ran past ``--timeout``), 130 / 143 stopped by Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import argparse
import shlex
import signal
from pathlib import Path

import jinja2
from rich.console import Console
from rich.table import Table

from stanjax.reports.stats import MIN_BLOCKS, Ratio
from stanjax.runner.commands.run import add_wait
from stanjax.runner.measure import validity
from stanjax.runner.measure.jobs import interrupted
from stanjax.runner.pairing.check import STAGES, CheckResult, check
from stanjax.runner.pairing.check_verdicts import EXIT
from stanjax.runner.pairing.pair_files import PAIR
from stanjax.runner.pairing.speed_advice import figure

DESCRIPTION = """\
Check that a Stan program and a NumPyro model define the same posterior on your data, then compare their speed.

  static   data keys, types and shapes against the Stan data block and the NumPyro function's signature;
           NumPyro's sample sites against the Stan parameters (names, shapes, constraints). Read from the
           programs (stanc's syntax tree, one abstract trace of the model): nothing compiles. Exit 2 on a problem.
  density  at --points draws of a short Stan run (one chain, 200 warm-up iterations), Stan's and NumPyro's log
           densities must differ by one constant (to 1e-6) and their gradients agree; a failure names the
           parameters the difference moves with. Exit 1.
  run      a short run of bundled Stan and NumPyro on the CPU, --repeats times each: R-hat, ESS and divergence
           gates on every run, the two engines' posterior means and sds within 5 combined MCSEs, then ESS/s
           (NumPyro / Stan: the median over paired repeats, a 90 % interval from 5 repeats), ESS per 1000
           gradients and ms per gradient on each side, and each parameter's mean and sd on both sides. With
           --engines ... nutpie_stan nutpie_jax, nutpie runs both programs beside them (one sampler): nutpie on
           your Stan program, and the gap split into the gradient's part and the sampler's.

Verdicts: "same posterior" (exit 0), "different posterior" (exit 1: the density check failed), "sampling
failed" (exit 3: the densities agree but a run failed a gate or the draws disagree; with advice). Exit 2: a
problem with the input, found before anything runs, or a static or density stage that ran past --timeout (each runs
in a worker process of its own). Exit 130 / 143: stopped by Ctrl-C / SIGTERM, nothing left running. Writes
OUT/check.html and appends the runs' records to OUT/results.jsonl."""

EPILOG = """\
examples:
  stanjax check examples/poisson/stan/poisson_regression.stan \\
                examples/poisson/jax_models/poisson_regression.py --data examples/poisson/counts.json
  stanjax check eight_schools-eight_schools_noncentered
  stanjax check counts_synth-poisson_regression --model-dir examples/poisson --size small"""


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "check",
        help="check that a Stan program and a NumPyro model are the same posterior, and compare their speed",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "target",
        nargs="+",
        metavar="ID | MODEL.stan MODEL.py",
        help="a posterior ID (this repository's, or --model-dir's), or a Stan program and a NumPyro "
        "file whose function is named as the file, with --data",
    )
    parser.add_argument(
        "--data",
        type=Path,
        metavar="DATA.json",
        help="the data of a MODEL.stan MODEL.py pair: Stan's JSON format, keys = the data block",
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        metavar="DIR",
        help="a folder of models laid out like this repository (models/<id>.py, "
        "stan/<model>.stan, jax_models/<model>.py), whose IDs the target may name",
    )
    parser.add_argument("--size", default="tiny", help="size preset of a posterior ID (default: %(default)s)")
    parser.add_argument(
        "--seed",
        type=int,
        default=1,
        help="data seed; the density check's points and the sampler seeds follow from it (default: %(default)s)",
    )
    parser.add_argument("--points", type=int, default=5, help="points of the density check (default: %(default)s)")
    parser.add_argument("--chains", type=int, default=4, help="chains per run (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=500, help="warmup iterations per chain (default: %(default)s)")
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain (default: %(default)s)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="paired runs per engine (one of each, back to back, "
        "per repeat): the speed ratio is their median, with a 90 %% interval from 5 on "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds before the static stage, the density stage or one run is stopped (default: %(default)s)",
    )
    parser.add_argument(
        "--reference",
        type=Path,
        metavar="DRAWS.json[.zip]",
        help="with MODEL.stan MODEL.py: reference draws in posteriordb's format (reference_posteriors/draws/"
        "draws/<posterior>.json.zip: a list of chains, each {parameter: draws}): both engines' runs are "
        "gated on it as the zoo's are on their references (a posterior ID brings its own), and its means "
        "and sds stand beside theirs",
    )
    parser.add_argument(
        "--stop-after", choices=STAGES, default="run", help="the last stage to run (default: %(default)s)"
    )
    parser.add_argument(
        "--engines",
        nargs="+",
        default=list(PAIR),
        metavar="NAME",
        help="the short run's engines: stan and numpyro (the pair: always), with nutpie_stan (nutpie on the Stan "
        "program, through a BridgeStan build: BRIDGESTAN) and nutpie_jax (nutpie on the NumPyro model's "
        "potential); with both, the speed advice says whether the gradient or the sampler made the difference "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for check.html, the runs' records and logs, and a pair's "
        "model folder (default: out/check/<posterior id>)",
    )
    add_wait(parser)
    parser.set_defaults(handler=main)


# --- output --------------------------------------------------------------------------------------------------------

HTML = jinja2.Environment(autoescape=True).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>stanjax check: {{ spec.id }}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { padding: .3rem .7rem; border-bottom: 1px solid #ddd; }
th { text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #17692b; font-weight: 600; } .fail { color: #b00020; font-weight: 600; } code { font-size: 90%; }
</style></head><body>
<h1>stanjax check: <code>{{ spec.id }}</code></h1>
<p>{{ spec.description.rstrip('.') }}. Stan: <code>{{ spec.stan_file }}</code>;
NumPyro: <code>{{ spec.jax_file }}</code>; size <code>{{ size }}</code>, data seed {{ seed }}. Verdict:
<span class="{{ 'pass' if verdict in (None, 'same posterior') else 'fail' }}">{{ headline }}</span>.</p>
{% if advice %}<ul>{% for line in advice %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}
<table><tr><th>stage</th><th>verdict</th><th>what was found</th><th>seconds</th></tr>
{% for stage in stages %}<tr><td>{{ stage.name }}</td>
<td class="{{ 'pass' if stage.ok else 'fail' }}">{{ 'ok' if stage.ok else 'FAIL' }}</td>
<td>{{ stage.line }}{% for note in stage.notes %}<br>note: {{ note }}{% endfor %}</td>
<td class="n">{{ '%.1f' % stage.seconds }}</td></tr>{% endfor %}</table>
{% if rows %}
<h2>Short run</h2>
<p>{{ settings }}. Rates are medians over the runs; ESS is the minimum bulk ESS over parameters.</p>
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
""")


def speed_text(speed: Ratio | None) -> str:
    if speed is None:
        return "no ratio: no repeat with valid runs of both engines"
    spread = (
        f"90 % interval {speed.low:.3g} to {speed.high:.3g} over {speed.blocks} paired repeats"
        if speed.blocks >= MIN_BLOCKS
        else f"{speed.blocks} paired repeat(s), range {speed.low:.3g} to {speed.high:.3g}: too few for an interval "
        f"({MIN_BLOCKS} needed)"
    )
    return f"NumPyro / Stan ESS/s {speed.value:.3g} ({spread})"


def agreement_text(pairs: list[dict]) -> str:
    if not pairs:
        return "not compared: no repeat completed on both engines"
    worst = max(pairs, key=lambda p: p["max_z"])
    sd = max((p.get("max_z_sd", 0.0) for p in pairs), default=0.0)
    verdict = "yes" if all(p["passed"] for p in pairs) else "NO"
    return (
        f"{verdict}: largest |z| {worst['max_z']:.2g} for means ({worst['worst_parameter']}), {sd:.2g} for sds, "
        f"limit {validity.K_REFERENCE:g} (per repeat, Stan's run against NumPyro's)"
    )


def show(console: Console, stage: dict) -> None:
    mark = "[green]ok[/green]" if stage["ok"] else "[red]FAIL[/red]"
    console.print(
        f"  {stage['name']:<8} {mark}  {stage['line']} [dim]({stage['seconds']:.1f} s)[/dim]",
        highlight=False,
        soft_wrap=True,
    )
    for note in stage["notes"]:
        console.print(f"           note: {note}", highlight=False, soft_wrap=True)


def table(rows: list[dict]) -> Table:
    out = Table(box=None, pad_edge=False)
    for column in (
        "engine",
        "valid",
        "ESS/s",
        "ESS/1k grad",
        "ms/grad",
        "min ESS",
        "max R-hat",
        "diverg.",
        "compile s",
    ):
        out.add_column(column, justify="left" if column == "engine" else "right")
    for r in rows:
        out.add_row(
            r["engine"],
            f"{r['valid']}/{r['runs']}",
            figure(r["ess_per_s"]),
            figure(r["ess_per_1000_gradients"]),
            figure(r["ms_per_gradient"]),
            f"{r['min_ess_bulk']:.0f}",
            f"{r['max_rhat']:.3f}",
            str(r["divergences"]),
            f"{r['compile_s']:.1f}",
        )
    return out


PARAMETERS_SHOWN = 10  # rows of the per-parameter table in the terminal (the page has all)


def parameter_table(parameters: list[dict]) -> Table:
    out = Table(box=None, pad_edge=False)
    with_reference = any(row["reference"] for row in parameters)
    for column in ("parameter", "Stan mean", "Stan sd", "NumPyro mean", "NumPyro sd", "z") + (
        ("ref. mean", "ref. sd") if with_reference else ()
    ):
        out.add_column(column, justify="left" if column == "parameter" else "right")
    for row in parameters:
        given = (
            ((figure(row["reference"]["mean"]), figure(row["reference"]["sd"])) if row["reference"] else ("", ""))
            if with_reference
            else ()
        )
        out.add_row(
            row["parameter"],
            figure(row["stan"]["mean"]),
            figure(row["stan"]["sd"]),
            figure(row["numpyro"]["mean"]),
            figure(row["numpyro"]["sd"]),
            f"{row['z']:.2f}",
            *given,
        )
    return out


# --- the verb ------------------------------------------------------------------------------------------------------


def main(args) -> int:
    console = Console(highlight=False)
    shown: list[str] = []

    def progress(result: CheckResult) -> None:
        """Each stage's line once it is done; the short run's tables after it."""
        if not shown:
            console.print(f"stanjax check [bold]{result.spec.id}[/bold] (size {result.size}, seed {result.seed})")
        for stage in result.stages[len(shown) :]:
            show(console, stage)
            shown.append(stage["name"])
            if stage["name"] == "run" and result.rows:
                print_runs(console, result)

    try:
        result = check(args, progress)  # the namespace has CheckRequest's names
    except KeyboardInterrupt as stop:  # in the static or density stage: its worker ended, nothing was recorded
        signum = getattr(stop, "signum", signal.SIGINT)  # a plain KeyboardInterrupt is Ctrl-C
        print(f"interrupted ({signal.Signals(signum).name}) before the runs: nothing recorded")
        return 128 + signum
    if result.stopped is not None:
        return interrupted(result.stopped, result.records, result.jobs, result.out)
    report = {
        "spec": result.spec,
        "size": result.size,
        "seed": result.seed,
        "stages": result.stages,
        "rows": result.rows,
        "parameters": result.parameters,
        "records": result.out / "results.jsonl",
        "command": command(args),
        "advice": result.advice,
    }
    if result.rows:
        report |= {
            "settings": result.settings,
            "speed": speed_text(result.speed),
            "agrees": agreement_text(result.pairs),
            "speed_advice": result.speed_advice,
        }
    return _finish(console, result.out, report, result.verdict)


def print_runs(console: Console, result: CheckResult) -> None:
    """The short run in the terminal: per engine, what failed, the parameters that differ most, speed."""
    console.print(table(result.rows))
    for row in result.rows:
        if row["failed"]:
            console.print(f"  {row['engine']} failed: {', '.join(row['failed'])}", highlight=False, soft_wrap=True)
    if result.parameters:
        console.print(parameter_table(result.parameters[:PARAMETERS_SHOWN]))
    if len(result.parameters) > PARAMETERS_SHOWN:
        console.print(
            f"  ({PARAMETERS_SHOWN} of {len(result.parameters)} parameters, largest |z| first; all in "
            f"{result.out / 'check.html'})",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"  speed          {speed_text(result.speed)}\n  engines agree  {agreement_text(result.pairs)}",
        highlight=False,
        soft_wrap=True,
    )
    for line in result.speed_advice:
        console.print(f"  speed advice   {line}", highlight=False, soft_wrap=True)


def command(args) -> str:
    """The check as a command line (what the page was made by)."""
    options = [
        ("--data", args.data),
        ("--model-dir", args.model_dir),
        ("--size", args.size if args.data is None else None),
        ("--seed", args.seed),
        ("--reference", args.reference),
    ]
    engines = ["--engines", *args.engines] if list(args.engines) != list(PAIR) else []
    return shlex.join(
        [
            "stanjax",
            "check",
            *args.target,
            *(str(part) for option, value in options if value is not None for part in (option, value)),
            *engines,
        ]
    )


def _finish(console: Console, out: Path, report: dict, verdict: str | None) -> int:
    """The HTML page and the verdict's exit code; ``None``: every stage run passed, the check stopped before the
    run that gives a verdict (exit 0)."""
    out.mkdir(parents=True, exist_ok=True)
    page = out / "check.html"
    last = report["stages"][-1]["name"]
    headline = verdict.upper() if verdict else f"PASS (stopped after {last}: no verdict on the draws)"
    page.write_text(HTML.render(verdict=verdict, headline=headline, figure=figure, **report))
    for line in report.get("advice", []):
        console.print(f"  advice: {line}", highlight=False, soft_wrap=True)
    console.print(f"{headline}: {page}", highlight=False, soft_wrap=True)
    return EXIT[verdict] if verdict else 0
