"""``stanjax check``: are a Stan program and a NumPyro model the same posterior, and which one samples it faster?

The stages are :mod:`stanjax.runner.pairing.check`'s, the verdicts :mod:`stanjax.runner.pairing.check_verdicts`'s; this verb parses the
options, prints each stage as it ends, and writes ``OUT/check.html``. Exit codes: 0 *same posterior*, 1 *different
posterior*, 3 *sampling failed*, 2 a problem with the input found before anything runs (or a static or density
stage that ran past ``--timeout``), 130 / 143 stopped by Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import signal
from pathlib import Path

from rich.console import Console
from rich.table import Table

from stanjax.reports.stats import MIN_BLOCKS, Ratio
from stanjax.runner.commands import check_page
from stanjax.runner.commands.run import add_wait
from stanjax.runner.measure import validity
from stanjax.runner.measure.stopping import interrupted
from stanjax.runner.pairing.check import STAGES, check
from stanjax.runner.pairing.check_result import CheckResult
from stanjax.runner.pairing.check_verdicts import EXIT, SAME
from stanjax.runner.pairing.pair_files import PAIR, CheckRequest
from stanjax.runner.pairing.speed_advice import figure

DESCRIPTION = """\
Check that a Stan program and a NumPyro model define the same posterior on your data, then compare their speed.

  static   data keys, types and shapes against the Stan data block and the NumPyro function's signature;
           NumPyro's sample sites against the Stan parameters (names, shapes, constraints). Read from the
           programs (stanc's syntax tree, one abstract trace of the model): nothing compiles. Exit 2 on a problem.
  density  at --points draws of a short Stan run (one chain, 200 warm-up iterations), Stan's and NumPyro's log
           densities must differ by one constant (to 1e-6) and their gradients agree; a failure names the
           parameters the difference moves with. Exit 1.
  run      a short run of bundled Stan and NumPyro on the CPU, --repeats times each, once its time, estimated
           from the density stage's short run, fits --budget: R-hat, ESS and divergence gates on every run (an
           engine whose runs fail R-hat alone is judged on their chains pooled; runs that fail only ESS, R-hat
           or the engines' agreement run again with twice the draws, to 4 x --draws within --budget), the two
           engines' posterior means and sds within 5 combined MCSEs, then ESS/s (NumPyro / Stan: the median
           over paired repeats, a 90 % interval from 5 repeats), ESS per 1000
           gradients and ms per gradient on each side, and each parameter's mean and sd on both sides. With
           --engines ... nutpie_stan nutpie_jax, nutpie runs both programs beside them (one sampler): nutpie on
           your Stan program, and the gap split into the gradient's part and the sampler's.

Verdicts: "same posterior" (exit 0), "different posterior" (exit 1: the density check failed), "sampling
failed" (exit 3: the densities agree but a run failed a gate or the draws disagree; with advice). Exit 2: a
problem with the input, found before anything runs, a static or density stage that ran past --timeout (each runs
in a worker process of its own), or runs estimated past --budget. Exit 130 / 143: stopped by Ctrl-C / SIGTERM,
nothing left running. Writes OUT/check.html (once the check holds OUT: every verdict, exit 2 and a stop too) and
appends the runs' records to OUT/results.jsonl, their draws to OUT/draws."""

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
        "--budget",
        type=float,
        default=10.0,
        metavar="MINUTES",
        help="minutes the runs may take: estimated from the density stage's short Stan run before they start, and "
        "refused past it, saying what would fit (default: %(default)s)",
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
        f"{verdict}: largest |z| {worst['max_z']:.2g} for means ({worst['worst_parameter']} in repeat "
        f"{worst['repeat'] + 1}), {sd:.2g} for sds, limit {validity.K_REFERENCE:g} (each repeat's Stan run against "
        "its NumPyro run; the parameter table's z pools every run)"
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


LOG_WIDTH = 160  # columns of the check's output where it is not a terminal
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
    if not console.is_terminal:  # a log: tables at their width, not wrapped at 80 columns
        console = Console(highlight=False, width=LOG_WIDTH)
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
        result = check(args, progress, lambda spec_id, out, err: refused_page(args, spec_id, out, err))
    except KeyboardInterrupt as stop:  # in the static or density stage: its worker ended, nothing was recorded
        signum = getattr(stop, "signum", signal.SIGINT)  # a plain KeyboardInterrupt is Ctrl-C
        print(f"interrupted ({signal.Signals(signum).name}) before the runs: nothing recorded")
        return 128 + signum
    report = {
        "spec": result.spec,
        "spec_id": result.spec.id,
        "size": result.size,
        "seed": result.seed,
        "stages": result.stages,
        "rows": result.rows,
        "parameters": result.parameters,
        "records": result.out / "results.jsonl",
        "command": command(args, result.out),
        "advice": result.advice,
        "settings": result.settings,
        "speed": speed_text(result.speed),
        "agrees": agreement_text(result.pairs),
        "speed_advice": result.speed_advice,
    }
    if result.stopped is not None:  # the page holds the runs that finished, without a verdict
        signum = getattr(result.stopped, "signum", signal.SIGINT)
        done = f"{len(result.records)} of {len(result.jobs)} runs"
        check_page.write_page(
            result.out, report, f"STOPPED ({signal.Signals(signum).name}) after {done}: no verdict", False
        )
        return interrupted(result.stopped, result.records, result.jobs, result.out)
    return _finish(console, result.out, report, result.verdict)


def refused_page(args, spec_id: str, out: Path, err: Exception) -> None:
    """check.html for a check refused for its input once it held ``out`` (exit 2): an earlier check's page was set
    aside first (``pair_files.target``)."""
    check_page.write_refused(out, spec_id, str(err).splitlines(), command(args, out))


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


# CheckRequest's options that the "Made by" line repeats where they differ from their defaults (--out always)
REPEATED = (
    *("data", "model_dir", "size", "seed", "points", "chains", "warmup", "draws", "repeats", "timeout"),
    *("budget", "reference", "stop_after", "engines"),
)


def command(args, out: Path) -> str:
    """The check as a command line that makes it again (what the page was made by): the target, every option that
    differs from its default, and the folder it wrote."""
    defaults = {entry.name: entry.default for entry in dataclasses.fields(CheckRequest)} | {"engines": list(PAIR)}
    parts = ["stanjax", "check", *args.target]
    for name in REPEATED:
        value = getattr(args, name)
        if value is None or value == defaults[name] or (name == "size" and args.data is not None):
            continue
        parts += [f"--{name.replace('_', '-')}", *(map(str, value) if isinstance(value, list) else [str(value)])]
    return shlex.join([*parts, "--out", str(out)])


def _finish(console: Console, out: Path, report: dict, verdict: str | None) -> int:
    """The HTML page and the verdict's exit code; ``None``: every stage run passed, the check stopped before the
    run that gives a verdict (exit 0)."""
    last = report["stages"][-1]["name"]
    headline = verdict.upper() if verdict else f"PASS (stopped after {last}: no verdict on the draws)"
    page = check_page.write_page(out, report, headline, verdict in (None, SAME))
    for line in report.get("advice", []):
        console.print(f"  advice: {line}", highlight=False, soft_wrap=True)
    console.print(f"{headline}: {page}", highlight=False, soft_wrap=True)
    return EXIT[verdict] if verdict else 0
