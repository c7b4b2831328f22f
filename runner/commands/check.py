"""``stanjax check``: are a Stan program and a NumPyro model the same posterior, and which one samples it faster?

Three stages, each run only when the one before passed, so a mistake surfaces at the cheapest stage that can see it:

1. static checks (:mod:`runner.static_checks`): data keys, types and shapes, parameter names, shapes and
   constraints, read from the programs, no compile; one line per problem, exit 2;
2. the density check (:mod:`runner.density`) at the draws of a short Stan run (the posterior's region): log
   densities differ by one constant and gradients agree. When they do not, each parameter is moved alone from one
   point to another: a term that differs changes the offset only through the parameters it involves, so the
   parameters that move it are named;
3. a short run of both CPU engines (bundled Stan, NumPyro), each run in a worker as ``stanjax run`` runs it and
   judged by the same validity gates (R-hat, ESS, divergences; a reference where one exists), and the two engines
   agreeing: every parameter's mean and sd within 5 combined MCSEs of the other engine's run (the reference gate,
   the other engine's run as the reference).

Three verdicts, because a user must tell "the port differs" from "NUTS could not sample this": *same posterior*
(exit 0: density and draws agree), *different posterior* (exit 1: the density check failed, naming the
parameters), *sampling failed* (exit 3: the densities agree, but a run failed a gate or the draws disagree; with the
advice a Stan user would expect per failed gate). Then a per-parameter table (both sides' means and sds, z of the
difference) in the terminal and ``OUT/check.html``; the runs' records are appended to ``OUT/results.jsonl``.
A pair of files (``MODEL.stan MODEL.py --data DATA.json``) is first laid out under ``OUT/model`` as a model folder
(the layout ``--model-dir`` reads, its one size preset ``given``) and checked as a model of the zoo is.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np
from rich.console import Console
from rich.table import Table

import jax_models
import models
from models import ModelSpec, UsageError
from reports.stats import MIN_BLOCKS, Ratio, median_ratio
from runner import density, diagnose, references, static_checks, validity
from runner.campaign import interrupted, run_campaign
from runner.commands import run
from runner.engines.stan import check_program

GIVEN = "given"  # the size preset of a pair checked on a data file
STAGES = ("static", "density", "run")
# The three verdicts and their exit codes (2 stays a problem with the input, found before anything runs).
SAME, DIFFERENT, SAMPLING_FAILED = "same posterior", "different posterior", "sampling failed"
EXIT = {SAME: 0, DIFFERENT: 1, SAMPLING_FAILED: 3}
# What a Stan user would be told for each failed gate (the gates of :mod:`runner.validity`).
ADVICE = {
    "divergences": "divergent transitions: the sampler cannot follow the posterior's geometry, as in a hierarchical "
                   "model's funnel; non-centre the group parameters (Stan: offset/multiplier or a standard-normal "
                   "raw parameter; NumPyro: LocScaleReparam or the same raw site) or raise adapt_delta",
    "rhat": "R-hat above 1.01: the chains disagree; run longer (--warmup, --draws) and look for a funnel or "
            "several modes",
    "ess": "ESS below 100 a chain: run longer (--draws), or reparameterise where draws are strongly correlated",
    "finite": "non-finite draws: a parameter overflowed; check its constraint and its prior",
    "completed": "a run did not finish: its log says why",
    "reference": "a run's means or sds differ from the model's reference posterior",
}
ENGINE_NAMES = {"stan": "Stan", "numpyro": "NumPyro"}
DISAGREE = ("both engines' runs pass their gates, yet their means or sds differ by more than 5 combined MCSEs: "
            "run longer; if the gap stays, the two posteriors differ where the density check's points did not "
            "look (raise --points)")

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
           gradients and ms per gradient on each side, and each parameter's mean and sd on both sides.

Verdicts: "same posterior" (exit 0), "different posterior" (exit 1: the density check failed), "sampling
failed" (exit 3: the densities agree but a run failed a gate or the draws disagree; with advice). Exit 2: a
problem with the input, found before anything runs. Writes OUT/check.html and appends the runs' records to
OUT/results.jsonl."""

EPILOG = """\
examples:
  stanjax check examples/poisson/stan/poisson_regression.stan \\
                examples/poisson/jax_models/poisson_regression.py --data examples/poisson/counts.json
  stanjax check eight_schools-eight_schools_noncentered
  stanjax check counts_synth-poisson_regression --model-dir examples/poisson --size small"""


def add_parser(verbs) -> None:
    parser = verbs.add_parser("check", help="check that a Stan program and a NumPyro model are the same posterior, "
                              "and compare their speed", description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="+", metavar="ID | MODEL.stan MODEL.py",
                        help="a posterior ID (this repository's, or --model-dir's), or a Stan program and a NumPyro "
                        "file whose function is named as the file, with --data")
    parser.add_argument("--data", type=Path, metavar="DATA.json",
                        help="the data of a MODEL.stan MODEL.py pair: Stan's JSON format, keys = the data block")
    parser.add_argument("--model-dir", type=Path, metavar="DIR",
                        help="a folder of models laid out like this repository (models/<id>.py, "
                        "stan/<model>.stan, jax_models/<model>.py), whose IDs the target may name")
    parser.add_argument("--size", default="tiny", help="size preset of a posterior ID (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="data seed; the density check's points and the "
                        "sampler seeds follow from it (default: %(default)s)")
    parser.add_argument("--points", type=int, default=5, help="points of the density check (default: "
                        "%(default)s)")
    parser.add_argument("--chains", type=int, default=4, help="chains per run (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=500, help="warmup iterations per chain (default: %(default)s)")
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="paired runs per engine (one of each, back to back, "
                        "per repeat): the speed ratio is their median, with a 90 %% interval from 5 on "
                        "(default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before one run is stopped "
                        "(default: %(default)s)")
    parser.add_argument("--reference", type=Path, metavar="DRAWS.json[.zip]",
                        help="reference draws in posteriordb's format (reference_posteriors/draws/draws/"
                        "<posterior>.json.zip: a list of chains, each {parameter: draws}): both engines' runs are "
                        "checked against it as against the zoo's references, and its means and sds stand beside "
                        "theirs")
    parser.add_argument("--stop-after", choices=STAGES, default="run", help="the last stage to run "
                        "(default: %(default)s)")
    parser.add_argument("--out", type=Path, help="folder for check.html, the runs' records and logs, and a pair's "
                        "model folder (default: out/check/<posterior id>)")
    parser.set_defaults(handler=main)


# --- what to check -------------------------------------------------------------------------------------------------

def target(args) -> tuple[ModelSpec, str, list[str], tuple[Path, Path] | None]:
    """The spec to check, its size preset, the data keys left out of it (``ignored_keys``) and the user's Stan and
    NumPyro files (None for a posterior ID); a pair of files is laid out as a model folder first."""
    if args.model_dir:
        models.add_model_dir(args.model_dir)
    if len(args.target) == 1 and not args.target[0].endswith((".stan", ".py")):
        if args.data:
            raise UsageError("--data goes with MODEL.stan MODEL.py; a posterior ID brings its own data")
        return models.get(args.target[0]), args.size, [], None
    if len(args.target) != 2 or not (args.target[0].endswith(".stan") and args.target[1].endswith(".py")):
        raise UsageError("expected a posterior ID, or MODEL.stan MODEL.py --data DATA.json")
    stan_file, numpyro_file = map(Path, args.target)
    if args.data is None:
        raise UsageError("MODEL.stan MODEL.py needs --data DATA.json (Stan's JSON format)")
    for path in (stan_file, numpyro_file, args.data):
        if not path.is_file():
            raise UsageError(f"no such file: {path}")
    spec_id = f"{_identifier(args.data.stem)}-{_identifier(numpyro_file.stem)}"
    spec, ignored = lay_out_pair(stan_file, numpyro_file, args.data, spec_id, out_dir(args, spec_id) / "model")
    return spec, GIVEN, ignored, (stan_file, numpyro_file)


def as_given(text: str, spec: ModelSpec, given: tuple[Path, Path] | None) -> str:
    """A message's location in the laid-out copy of the user's NumPyro file (``static_checks.where``), named as the
    user gave the file."""
    return text if given is None else text.replace(f" of {spec.jax_file.name}: ", f" of {given[1]}: ")


def out_dir(args, spec_id: str) -> Path:
    return args.out or Path("out/check") / spec_id


def _identifier(text: str) -> str:
    return re.sub(r"\W", "_", text.replace("-", "_"))


def read_json_data(path: Path) -> dict:
    """Stan's JSON data format as the generators give data: lists as NumPy arrays (ints int64, else float64)."""
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise UsageError(f"{path} is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} holds no JSON object of data entries")
    return {key: np.asarray(value) if isinstance(value, list) else value for key, value in data.items()}


SPEC_TEMPLATE = '''"""Written by `stanjax check`: {stan} and {numpyro} on {data}, laid out as a model folder."""

from pathlib import Path

from models import ModelSpec, Parameter
from runner.commands.check import read_json_data


def generate(seed: int) -> dict:
    """The data file as given (the seed is unused)."""
    return read_json_data(Path(__file__).with_suffix(".json"))


SPEC = ModelSpec(
    id={id!r},
    description={description!r},
    parameters=({parameters}),
    sizes={{{given!r}: {{}}}},
    generate=generate,
)
'''


def lay_out_pair(stan_file: Path, numpyro_file: Path, data_file: Path, spec_id: str,
                 folder: Path) -> tuple[ModelSpec, list[str]]:
    """The pair as a model folder (models/<id>.py and .json, stan/, jax_models/), its parameters (names and shapes
    on the data) read from the Stan program; the spec, from the registry, and the data keys its data file leaves
    out (``ignored_keys``)."""
    data = read_json_data(data_file)
    if folder.exists():
        shutil.rmtree(folder)
    for sub in ("models", "stan", "jax_models"):
        (folder / sub).mkdir(parents=True)
    model_name = spec_id.split("-", 1)[1]
    shutil.copyfile(stan_file, folder / "stan" / f"{model_name}.stan")
    shutil.copyfile(numpyro_file, folder / "jax_models" / f"{model_name}.py")
    shutil.copyfile(data_file, folder / "models" / f"{spec_id}.json")
    provisional = ModelSpec(spec_id, "", (), {GIVEN: {}}, lambda seed: data, home=folder.resolve())
    check_program(provisional)  # stanc's own message for a program that does not compile
    program = static_checks.read_program(provisional.stan_file)
    env = program.environment(data)
    parameters = [(p.name, declared_shape(p, env, stan_file)) for p in program.parameters]
    (folder / "models" / f"{spec_id}.py").write_text(SPEC_TEMPLATE.format(
        stan=stan_file, numpyro=numpyro_file, data=data_file, id=spec_id, given=GIVEN,
        description=f"{stan_file.name} and {numpyro_file.name} on {data_file.name}",
        parameters="".join(f"Parameter({name!r}, {shape!r}), " for name, shape in parameters)))
    models.add_model_dir(folder)
    spec = models.get(spec_id)
    ignored = ignored_keys(data, program, spec)
    if ignored:
        given = json.loads(data_file.read_text())
        (folder / "models" / f"{spec_id}.json").write_text(
            json.dumps({key: value for key, value in given.items() if key not in ignored}))
    return spec, ignored


def ignored_keys(data: dict, program: static_checks.StanProgram, spec: ModelSpec) -> list[str]:
    """Data keys that neither the Stan data block declares nor the NumPyro function names as an argument: left out
    of both, as CmdStan ignores keys its data block does not declare (posteriordb's data files carry such keys). A
    key the NumPyro function takes but Stan does not declare stays, and the static checks refuse it (the two
    models would see different data); where the function does not load, none (the static checks say why)."""
    try:
        arguments = inspect.signature(jax_models.load(spec.model_name)).parameters
    except Exception:  # a user's module: the static checks report it in one line
        return []
    declared = {d.name for d in program.data}
    return sorted(key for key in data if key not in declared and key not in arguments)


def declared_shape(parameter: static_checks.Declaration, env: dict, stan_file: Path) -> tuple:
    """The shape on the data; where it is not known on them (a size the data lack), the sizes as Stan writes them,
    so that the static checks say what is missing."""
    shape = parameter.shape(env)
    if shape is not None:
        return shape
    try:
        return tuple(static_checks.text(size) for size in parameter.sizes())
    except static_checks.Unknown as err:
        raise UsageError(f"{stan_file.name}: parameter '{parameter.name}' has a type `stanjax check` does not "
                         f"compare: {err}") from None


# --- the density check, and where it fails -------------------------------------------------------------------------

@dataclass
class DensityVerdict:
    ok: bool
    line: str
    verdict: str | None = None  # where the stage ends the check: DIFFERENT, or SAMPLING_FAILED (Stan could not)


@contextlib.contextmanager
def _quiet():
    """Building the Stan model (the first time, a C++ compile) writes pystan's progress and the compiler's messages
    to this process's stdout and stderr: both file descriptors go to a temporary file meanwhile, so the terminal
    shows the verdict (a failed build raises, saying why)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield
        finally:
            log.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def density_stage(spec: ModelSpec, data: dict, n_points: int, seed: int) -> DensityVerdict:
    try:
        with _quiet():
            points = density.posterior_points(spec, data, n_points, seed)
            result = density.check(spec, data, points)
    except Exception as err:  # a user's model may raise anything at a point; Stan raises RuntimeError, ValueError
        located = static_checks.where(err, spec.jax_file)
        if located:  # the NumPyro model raised at a point of the posterior: the port is not the Stan program
            return DensityVerdict(False, f"the NumPyro model raised {type(err).__name__}: "
                                  f"{static_checks.first_line(err)}{located}", DIFFERENT)
        if not isinstance(err, (RuntimeError, ValueError)):
            raise
        return DensityVerdict(False, f"Stan could not build the model, sample it briefly or evaluate its draws: "
                              f"{static_checks.first_line(err)}", SAMPLING_FAILED)
    where = f"{n_points} points from a short Stan run"
    gradients = ("gradients not compared (the transforms differ)" if result.max_gradient_error is None else
                 f"gradients agree to {result.max_gradient_error:.1e}")
    if result.ok:
        return DensityVerdict(True, f"{where}: log densities differ by one constant (spread "
                              f"{result.offset_spread:.1e}), {gradients}")
    suspects, still = suspect_parameters(spec, data, points, result.tolerance)
    if result.constant_offset:
        what = f"log densities differ by one constant, but gradients differ by {result.max_gradient_error:.2g}"
    else:
        what = (f"{where}: log densities do not differ by one constant (the offset moves by "
                f"{result.offset_spread:.2g}, tolerance {result.tolerance:.0e})")
    if suspects:
        moved = ", ".join(f"{name} ({score:.2g})" for name, score in suspects)
        blame = (f"the difference moves with {moved}" + (f", not with {', '.join(still)}" if still else "") +
                 ": compare the priors and likelihood terms that use " +
                 ("it" if len(suspects) == 1 else "them"))
    else:
        blame = "no single parameter moves the difference alone: compare the terms that combine parameters"
    return DensityVerdict(False, f"{what}; {blame}", DIFFERENT)


def suspect_parameters(spec: ModelSpec, data: dict, points: list[dict],
                       tolerance: float) -> tuple[list[tuple[str, float]], list[str]]:
    """Each parameter moved alone from the first point to each other point's value: how far the offset between
    Stan's and NumPyro's log densities moves (log density units). The parameters that move it by more than
    ``tolerance``, most first; and those that do not."""
    with _quiet():
        model = density.stan_model(spec, data)

    def offset(point: dict) -> float:
        return density.stan_side(spec, model, point)[0] - density.numpyro_side(spec, data, point)[0]

    base = offset(points[0])
    scores = {}
    for parameter in spec.parameters:
        moved = []
        for other in points[1:3]:
            try:
                moved.append(offset({**points[0], parameter.name: other[parameter.name]}))
            except (RuntimeError, ValueError):  # Stan refuses the mixed point (a constraint between parameters)
                continue
        scores[parameter.name] = max((abs(value - base) for value in moved), default=0.0)
    suspects = sorted(((name, s) for name, s in scores.items() if not s <= tolerance), key=lambda item: -item[1])
    return suspects, [name for name, s in scores.items() if s <= tolerance]


# --- the short run -------------------------------------------------------------------------------------------------

def as_reference(metrics) -> dict:
    """A run's means and sds with their MCSEs, in the shape of a reference posterior (for the reference gate)."""
    return {"parameters": {name: {"mean": metrics.posterior_mean[name], "mcse_mean": metrics.posterior_mcse[name],
                                  "sd": metrics.posterior_sd[name], "mcse_sd": metrics.posterior_mcse_sd[name]}
                           for name in metrics.posterior_mean}}


def agreement(records: list) -> list[dict]:
    """Per repeat with both engines' runs complete: the reference gate of the Stan run against the NumPyro run."""
    by_repeat: dict[int, dict] = {}
    for record in records:
        if record.status == "ok":
            by_repeat.setdefault(record.repeat, {})[record.engine] = record
    return [{"repeat": repeat, **validity.reference_gate(pair["stan"].metrics, as_reference(pair["numpyro"].metrics),
                                                         "the NumPyro run of the same repeat")}
            for repeat, pair in sorted(by_repeat.items()) if len(pair) == 2]


def speed_ratio(records: list) -> Ratio | None:
    """NumPyro's over Stan's ESS/s as the report takes it: per repeat (a paired block, both engines back to back)
    with valid runs of both, the ratio; their median with its order-statistic interval (``reports.stats``)."""
    blocks: dict[int, dict] = {}
    for r in records:
        if r.status == "ok" and r.valid:
            blocks.setdefault(r.block_of, {})[r.engine] = r.metrics.ess_per_s
    ratios = [pair["numpyro"] / pair["stan"] for pair in blocks.values() if len(pair) == 2]
    return median_ratio(ratios) if ratios else None


def engine_rows(records: list) -> list[dict]:
    """Per engine: runs valid of runs, medians of the rates, the worst diagnostics, the gates that failed."""
    rows = []
    for engine, label in (("stan", "Stan"), ("numpyro", "NumPyro")):
        mine = [r for r in records if r.engine == engine]
        done = [r for r in mine if r.status == "ok"]

        def median(key):
            return float(np.median([getattr(r.metrics, key) for r in done])) if done else float("nan")

        rows.append({
            "engine": label, "runs": len(mine), "valid": sum(r.valid for r in mine),
            "ess_per_s": median("ess_per_s"), "ess_per_1000_gradients": median("ess_per_1000_gradients"),
            "ms_per_gradient": median("ms_per_gradient"), "min_ess_bulk": median("min_ess_bulk"),
            "max_rhat": max((r.metrics.max_rhat for r in done), default=float("nan")),
            "divergences": sum(r.metrics.divergences for r in done),
            "compile_s": max((r.timings.compile_s for r in done), default=float("nan")),
            "failed": sorted({gate for r in mine for gate in r.failed_gates} |
                             {f"{r.status} (log: {r.log})" for r in mine if r.status != "ok"})})
    return rows


def parameter_rows(records: list, reference: dict | None = None) -> list[dict]:
    """Per parameter (Stan's element names), each engine's mean and sd over its completed runs with the MCSE of
    that mean, and z: the difference of the means over their combined MCSE; the reference's mean and sd beside
    them where one is given. Largest |z| first: where the two sides differ most is what a user reads first."""
    runs = {engine: [r.metrics for r in records if r.engine == engine and r.status == "ok"]
            for engine in ("stan", "numpyro")}
    if not all(runs.values()):
        return []
    rows = []
    for name in runs["stan"][0].posterior_mean:
        if not all(name in side[0].posterior_mean for side in runs.values()):
            continue
        row = {"parameter": name}
        for engine, side in runs.items():
            row[engine] = {"mean": float(np.mean([m.posterior_mean[name] for m in side])),
                           "sd": float(np.mean([m.posterior_sd[name] for m in side])),
                           "mcse": float(np.sqrt(sum(m.posterior_mcse[name] ** 2 for m in side))) / len(side)}
        scale = np.hypot(row["stan"]["mcse"], row["numpyro"]["mcse"])
        row["z"] = float((row["stan"]["mean"] - row["numpyro"]["mean"]) / scale) if scale > 0 else float("nan")
        row["reference"] = (reference or {}).get("parameters", {}).get(name)
        rows.append(row)
    return sorted(rows, key=lambda row: -abs(row["z"]) if np.isfinite(row["z"]) else -np.inf)


def run_verdict(records: list, pairs: list[dict], reference: dict | None = None) -> tuple[str, list[str]]:
    """SAME where every run passed its gates and the engines agree; else SAMPLING_FAILED (the density check agreed
    before the runs), with advice per failed gate naming the engines that failed it. With a reference given
    (``--reference``): DIFFERENT where the runs pass, the engines agree with each other and a run does not agree
    with the reference: the posterior the two share is not the reference's."""
    failed: dict[str, set[str]] = {}
    chains = []  # which chains failed R-hat, and how (runner.diagnose), per run
    for r in records:
        for gate in r.failed_gates or (["completed"] if r.status != "ok" else []):
            failed.setdefault(gate, set()).add(ENGINE_NAMES[r.engine])
        chains += [f"{ENGINE_NAMES[r.engine]} run {r.repeat + 1}: {line}"
                   for line in (r.gates.get("rhat") or {}).get("chains", [])]
    if failed:
        return SAMPLING_FAILED, [f"{' and '.join(sorted(engines))}: {ADVICE.get(gate, gate)}"
                                 for gate, engines in failed.items()] + chains + ([diagnose.ADVICE] if chains else [])
    if not pairs or not all(p["passed"] for p in pairs):
        return SAMPLING_FAILED, [DISAGREE]
    if reference is not None:
        gates = [(ENGINE_NAMES[r.engine], validity.reference_gate(r.metrics, reference, reference["source"]))
                 for r in records]
        off = [(engine, gate) for engine, gate in gates if not gate["passed"]]
        if off:
            engine, worst = max(off, key=lambda item: item[1]["max_z"])
            return DIFFERENT, [f"the engines agree with each other, not with the reference ({reference['source']}): "
                               f"{engine}'s mean of {worst['worst_parameter']} is {worst['max_z']:.2g} combined "
                               f"MCSEs from it (limit {validity.K_REFERENCE:g}): a different model or data"]
    return SAME, []


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
    spread = (f"90 % interval {speed.low:.3g} to {speed.high:.3g} over {speed.blocks} paired repeats"
              if speed.blocks >= MIN_BLOCKS else
              f"{speed.blocks} paired repeat(s), range {speed.low:.3g} to {speed.high:.3g}: too few for an interval "
              f"({MIN_BLOCKS} needed)")
    return f"NumPyro / Stan ESS/s {speed.value:.3g} ({spread})"


def agreement_text(pairs: list[dict]) -> str:
    if not pairs:
        return "not compared: no repeat completed on both engines"
    worst = max(pairs, key=lambda p: p["max_z"])
    sd = max((p.get("max_z_sd", 0.0) for p in pairs), default=0.0)
    verdict = "yes" if all(p["passed"] for p in pairs) else "NO"
    return (f"{verdict}: largest |z| {worst['max_z']:.2g} for means ({worst['worst_parameter']}), {sd:.2g} for sds, "
            f"limit {validity.K_REFERENCE:g} (per repeat, Stan's run against NumPyro's)")


def show(console: Console, stage: dict) -> None:
    mark = "[green]ok[/green]" if stage["ok"] else "[red]FAIL[/red]"
    console.print(f"  {stage['name']:<8} {mark}  {stage['line']} [dim]({stage['seconds']:.1f} s)[/dim]",
                  highlight=False, soft_wrap=True)
    for note in stage["notes"]:
        console.print(f"           note: {note}", highlight=False, soft_wrap=True)


def table(rows: list[dict]) -> Table:
    out = Table(box=None, pad_edge=False)
    for column in ("engine", "valid", "ESS/s", "ESS/1k grad", "ms/grad", "min ESS", "max R-hat", "diverg.",
                   "compile s"):
        out.add_column(column, justify="left" if column == "engine" else "right")
    for r in rows:
        out.add_row(r["engine"], f"{r['valid']}/{r['runs']}", figure(r["ess_per_s"]),
                    figure(r["ess_per_1000_gradients"]), figure(r["ms_per_gradient"]), f"{r['min_ess_bulk']:.0f}",
                    f"{r['max_rhat']:.3f}", str(r["divergences"]), f"{r['compile_s']:.1f}")
    return out


def speed_advice(rows: list[dict], stan_file: Path, shown_as: Path) -> list[str]:
    """Where a speed gap comes from. ESS/s is ESS per gradient over the cost of a gradient, so NumPyro / Stan
    ESS/s splits into the two: the gradient's cost ratio and the sampler's ESS-per-gradient ratio. Then the Stan
    program's model-block loops that hold sampling statements: element-by-element terms are what the Stan User's
    Guide's efficiency chapter has one vectorised statement replace."""
    stan, numpyro = (next(row for row in rows if row["engine"] == name) for name in ("Stan", "NumPyro"))
    advice = []
    with np.errstate(divide="ignore", invalid="ignore"):
        gradient = np.float64(stan["ms_per_gradient"]) / numpyro["ms_per_gradient"]
        sampler = np.float64(numpyro["ess_per_1000_gradients"]) / stan["ess_per_1000_gradients"]
    if np.isfinite(gradient) and np.isfinite(sampler) and gradient > 0 and sampler > 0:
        larger = "the cost of a gradient" if abs(np.log(gradient)) >= abs(np.log(sampler)) else "the sampler"
        advice.append(f"the median rates' NumPyro / Stan {gradient * sampler:.3g} = {gradient:.3g} from the cost of a "
                      f"gradient (Stan {figure(stan['ms_per_gradient'])} ms, NumPyro "
                      f"{figure(numpyro['ms_per_gradient'])} ms) x {sampler:.3g} from the sampler (ESS per 1000 "
                      f"gradients: Stan "
                      f"{figure(stan['ess_per_1000_gradients'])}, NumPyro {figure(numpyro['ess_per_1000_gradients'])})"
                      f": {larger} makes most of the difference")
    advice += [f"{shown_as}, line {line}: a loop of sampling statements, one element at a time; where its "
               "terms vectorise, one vectorised statement (y ~ normal(mu, sigma) over whole vectors) is faster"
               for line in sampling_loops(stan_file.read_text())]
    return advice


def sampling_loops(program: str) -> list[int]:
    """Lines of the model block's outermost ``for`` loops whose body holds a ``~`` or ``target +=`` statement."""
    text = re.sub(r"//[^\n]*|#[^\n]*", "", re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), program,
                                                  flags=re.S))
    model = re.search(r"\bmodel\s*\{", text)
    if not model:
        return []
    lines, position, depth = [], model.end(), 1
    while position < len(text) and depth:
        loop = re.compile(r"\bfor\s*\(|[{}]").search(text, position)
        if not loop:
            break
        if loop.group() == "{":
            depth, position = depth + 1, loop.end()
            continue
        if loop.group() == "}":
            depth, position = depth - 1, loop.end()
            continue
        body_end = _statement_end(text, _closing(text, loop.end() - 1))
        if re.search(r"~|target\s*\+=", text[loop.start():body_end]):
            lines.append(text.count("\n", 0, loop.start()) + 1)
        position = body_end
    return lines


def _closing(text: str, opening: int) -> int:
    """The index after the bracket that closes the one at ``opening``."""
    pairs, depth = {"(": ")", "{": "}"}, 0
    close = pairs[text[opening]]
    for index in range(opening, len(text)):
        depth += (text[index] == text[opening]) - (text[index] == close)
        if depth == 0:
            return index + 1
    return len(text)


def _statement_end(text: str, start: int) -> int:
    """The end of the statement that starts after ``start`` (a loop's body): a block, or up to its ``;``."""
    following = re.compile(r"\s*").match(text, start).end()
    if following < len(text) and text[following] == "{":
        return _closing(text, following)
    if re.match(r"for\s*\(", text[following:]):
        return _statement_end(text, _closing(text, text.index("(", following)))
    semicolon = text.find(";", following)
    return len(text) if semicolon < 0 else semicolon + 1


PARAMETERS_SHOWN = 10  # rows of the per-parameter table in the terminal (the page has all)


def parameter_table(parameters: list[dict]) -> Table:
    out = Table(box=None, pad_edge=False)
    with_reference = any(row["reference"] for row in parameters)
    for column in ("parameter", "Stan mean", "Stan sd", "NumPyro mean", "NumPyro sd", "z") + (
            ("ref. mean", "ref. sd") if with_reference else ()):
        out.add_column(column, justify="left" if column == "parameter" else "right")
    for row in parameters:
        given = ((figure(row["reference"]["mean"]), figure(row["reference"]["sd"])) if row["reference"] else
                 ("", "")) if with_reference else ()
        out.add_row(row["parameter"], figure(row["stan"]["mean"]), figure(row["stan"]["sd"]),
                    figure(row["numpyro"]["mean"]), figure(row["numpyro"]["sd"]), f"{row['z']:.2f}", *given)
    return out


def figure(value: float) -> str:
    """Three significant digits, without an exponent from 0.001 up."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


# --- the verb ------------------------------------------------------------------------------------------------------

def main(args) -> int:
    if not 2 <= args.points <= 100:
        raise UsageError(f"--points must be between 2 and 100, got {args.points}")
    console = Console(highlight=False)
    start = time.perf_counter()
    spec, size, ignored, given = target(args)
    out = out_dir(args, spec.id)
    data = spec.data(size, args.seed)
    try:
        findings = static_checks.require(spec, data)  # problems: one line each, exit 2
    except static_checks.StaticCheckError as err:
        raise static_checks.StaticCheckError(as_given(str(err), spec, given)) from None
    reference = None
    if args.reference is not None:
        reference = references.from_posteriordb(args.reference, references.element_names(findings.parameters))
    console.print(f"stanjax check [bold]{spec.id}[/bold] (size {size}, seed {args.seed})")
    shapes = ", ".join(static_checks.shape_text(name, shape) for name, shape in findings.parameters.items())
    notes = ([f"ignored data key(s) {', '.join(ignored)}: in neither {spec.stan_file.name}'s data block nor "
              f"{spec.model_name}()'s arguments (CmdStan ignores them too)"] if ignored else []) + findings.notes
    if reference is not None and reference["without"]:
        notes.append(f"the reference has no draws of {', '.join(reference['without'])}: not checked against it")
    stages = [{"name": "static", "ok": True, "seconds": time.perf_counter() - start, "notes": notes,
               "line": f"data {', '.join(data) or 'none'}; parameters {shapes}"}]
    report = {"spec": spec, "size": size, "seed": args.seed, "stages": stages, "rows": [], "parameters": [],
              "records": out / "results.jsonl", "command": command(args)}
    show(console, stages[-1])
    if args.stop_after == "static":
        return _finish(console, out, report, None)

    began = time.perf_counter()
    verdict = density_stage(spec, data, args.points, args.seed)
    verdict.line = as_given(verdict.line, spec, given)
    stages.append({"name": "density", "ok": verdict.ok, "line": verdict.line, "notes": [],
                   "seconds": time.perf_counter() - began})
    show(console, stages[-1])
    if not verdict.ok or args.stop_after == "density":
        return _finish(console, out, report, verdict.verdict)

    if findings.dependent_supports:  # the density agrees; NumPyro's sampler cannot run the model as written
        names = ", ".join(f"'{name}'" for name in findings.dependent_supports)
        stages.append({"name": "run", "ok": False, "seconds": 0.0, "notes": [],
                       "line": f"not run: NumPyro's MCMC cannot sample {names} as written"})
        show(console, stages[-1])
        report["advice"] = [f"NumPyro: {names}: a support whose bounds are computed from another parameter; NumPyro's "
                            "MCMC maps such a site's draws back through the wrong transform (or fails with an "
                            "UnexpectedTracerError on parallel chains), so no run would compare the samplers. Write "
                            "it in both programs as a unit-interval (or positive) parameter that the bound scales, "
                            "with the log Jacobian of that scaling (Stan: target += log1m(alpha1) for "
                            "beta1 = (1 - alpha1) * share)"]
        return _finish(console, out, report, SAMPLING_FAILED)

    began = time.perf_counter()
    argv = ["--suite", "tiny", "--models", spec.id, "--engines", "stan", "numpyro", "--stan", "bundled",
            "--size", size, "--chains", str(args.chains), "--warmup", str(args.warmup), "--draws", str(args.draws),
            "--repeats", str(args.repeats), "--seed", str(args.seed), "--timeout", str(args.timeout),
            "--out", str(out)]
    jobs = run.plan(run.parse(argv))
    out.mkdir(parents=True, exist_ok=True)
    written: list = []
    try:
        run_campaign(jobs, out, args.timeout, written)
    except KeyboardInterrupt as stop:
        return interrupted(stop, written, jobs, out)
    rows, pairs = engine_rows(written), agreement(written)
    outcome, advice = run_verdict(written, pairs, reference)
    settings = (f"{args.chains} chains x ({args.warmup} warmup + {args.draws} draws), {args.repeats} "
                f"repeat{'s' if args.repeats > 1 else ''} per engine, bundled Stan and NumPyro on the CPU")
    stages.append({"name": "run", "ok": outcome == SAME, "notes": [], "seconds": time.perf_counter() - began,
                   "line": settings})
    show(console, stages[-1])
    console.print(table(rows))
    for row in rows:
        if row["failed"]:
            console.print(f"  {row['engine']} failed: {', '.join(row['failed'])}", highlight=False, soft_wrap=True)
    parameters = parameter_rows(written, reference)
    if parameters:
        console.print(parameter_table(parameters[:PARAMETERS_SHOWN]))
    if len(parameters) > PARAMETERS_SHOWN:
        console.print(f"  ({PARAMETERS_SHOWN} of {len(parameters)} parameters, largest |z| first; all in "
                      f"{out / 'check.html'})", highlight=False, soft_wrap=True)
    speed, agrees = speed_text(speed_ratio(written)), agreement_text(pairs)
    why = speed_advice(rows, spec.stan_file, given[0] if given else spec.stan_file.name)
    console.print(f"  speed          {speed}\n  engines agree  {agrees}", highlight=False, soft_wrap=True)
    for line in why:
        console.print(f"  speed advice   {line}", highlight=False, soft_wrap=True)
    report |= {"rows": rows, "settings": settings, "speed": speed, "agrees": agrees, "parameters": parameters,
               "advice": advice, "speed_advice": why}
    return _finish(console, out, report, outcome)


def command(args) -> str:
    """The check as a command line (what the page was made by)."""
    options = [("--data", args.data), ("--model-dir", args.model_dir), ("--size", args.size if args.data is None
                                                                         else None), ("--seed", args.seed),
               ("--reference", args.reference)]
    return shlex.join(["stanjax", "check", *args.target,
                       *(str(part) for option, value in options if value is not None for part in (option, value))])


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
