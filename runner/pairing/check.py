"""Are a Stan program and a NumPyro model the same posterior, and which one samples it faster? The logic of
``stanjax check`` (the verb parses, prints and writes the page) and of the API's ``check``.

Three stages, each run only when the one before passed, so a mistake surfaces at the cheapest stage that can see it:

1. static checks (:mod:`stanjax.runner.measure.static_checks`): data keys, types and shapes, parameter names, shapes and
   constraints, read from the programs, no compile; a problem is a one-line StaticCheckError (exit 2);
2. the density check (:mod:`stanjax.runner.pairing.density`) at the draws of a short Stan run (the posterior's region): log
   densities differ by one constant and gradients agree. When they do not, each parameter is moved alone from one
   point to another: a term that differs changes the offset only through the parameters it involves, so the
   parameters that move it are named;
3. a short run of both CPU engines (bundled Stan, NumPyro), each run in a worker as ``stanjax run`` runs it and
   judged by the same validity gates (R-hat, ESS, divergences; a reference where one exists), and the two engines
   agreeing: every parameter's mean and sd within 5 combined MCSEs of the other engine's run (the reference gate,
   the other engine's run as the reference; the runs side by side: :mod:`stanjax.runner.pairing.agreement`).

Three verdicts (:mod:`stanjax.runner.pairing.check_verdicts`), because a user must tell "the port differs" from "NUTS could not
sample this": *same posterior* (density and draws agree), *different posterior* (the density check failed, naming
the parameters), *sampling failed* (the densities agree, but a run failed a gate or the draws disagree; with the
advice a Stan user would expect per failed gate). A pair of files (``MODEL.stan MODEL.py`` with a data file) is
first laid out under ``OUT/model`` as a model folder (the layout ``--model-dir`` reads, its one size preset
``given``) and checked as a model of the zoo is; the runs' records are appended to ``OUT/results.jsonl``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stanjax import jax_models, models
from stanjax.models import ModelSpec, UsageError, option
from stanjax.reports.stats import Ratio
from stanjax.runner.core.records import RunRecord
from stanjax.runner.measure import references, static_checks
from stanjax.runner.measure.jobs import run_jobs
from stanjax.runner.measure.plan import Request, plan
from stanjax.runner.pairing import density
from stanjax.runner.pairing.agreement import agreement, engine_rows, parameter_rows, speed_ratio
from stanjax.runner.pairing.check_verdicts import DIFFERENT, EXIT, SAME, SAMPLING_FAILED, run_verdict
from stanjax.runner.pairing.pair_files import CheckRequest, as_given, out_dir, reference_file, target
from stanjax.runner.pairing.speed_advice import speed_advice

STAGES = ("static", "density", "run")


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
            return DensityVerdict(
                False,
                f"the NumPyro model raised {type(err).__name__}: {static_checks.first_line(err)}{located}",
                DIFFERENT,
            )
        if not isinstance(err, (RuntimeError, ValueError)):
            raise
        return DensityVerdict(
            False,
            f"Stan could not build the model, sample it briefly or evaluate its draws: {static_checks.first_line(err)}",
            SAMPLING_FAILED,
        )
    where = f"{n_points} points from a short Stan run"
    gradients = (
        "gradients not compared (the transforms differ)"
        if result.max_gradient_error is None
        else f"gradients agree to {result.max_gradient_error:.1e}"
    )
    if result.ok:
        return DensityVerdict(
            True, f"{where}: log densities differ by one constant (spread {result.offset_spread:.1e}), {gradients}"
        )
    suspects, still = suspect_parameters(spec, data, points, result.tolerance)
    if result.constant_offset:
        what = f"log densities differ by one constant, but gradients differ by {result.max_gradient_error:.2g}"
    else:
        what = (
            f"{where}: log densities do not differ by one constant (the offset moves by "
            f"{result.offset_spread:.2g}, tolerance {result.tolerance:.0e})"
        )
    if suspects:
        moved = ", ".join(f"{name} ({score:.2g})" for name, score in suspects)
        blame = (
            f"the difference moves with {moved}"
            + (f", not with {', '.join(still)}" if still else "")
            + ": compare the priors and likelihood terms that use "
            + ("it" if len(suspects) == 1 else "them")
        )
    else:
        blame = "no single parameter moves the difference alone: compare the terms that combine parameters"
    return DensityVerdict(False, f"{what}; {blame}", DIFFERENT)


def suspect_parameters(
    spec: ModelSpec, data: dict, points: list[dict], tolerance: float
) -> tuple[list[tuple[str, float]], list[str]]:
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
    named = [element for name, score in suspects for element in elements_moving(name, score, offset, points, tolerance)]
    return named, [name for name, s in scores.items() if s <= tolerance]


ELEMENTS_TRIED = 50  # a vector's elements moved one at a time, where it has at most this many


def elements_moving(name: str, score: float, offset, points: list[dict], tolerance: float) -> list[tuple[str, float]]:
    """A suspect parameter as its elements that move the offset alone (``beta[2]``, Stan's 1-based indices), where
    it is a vector or array of at most ``ELEMENTS_TRIED`` elements and some but not all of them do; else itself."""
    first, other = np.asarray(points[0][name]), np.asarray(points[1][name])
    if first.ndim == 0 or not 1 < first.size <= ELEMENTS_TRIED:
        return [(name, score)]
    base, scores = offset(points[0]), {}
    for index in np.ndindex(first.shape):
        moved = first.copy()
        moved[index] = other[index]
        try:
            scores[f"{name}[{','.join(str(i + 1) for i in index)}]"] = abs(offset({**points[0], name: moved}) - base)
        except (RuntimeError, ValueError):  # a constrained vector (a simplex) moved in one element leaves its set
            return [(name, score)]
    found = sorted(((element, s) for element, s in scores.items() if not s <= tolerance), key=lambda item: -item[1])
    return found if 0 < len(found) < len(scores) else [(name, score)]


# --- the check -----------------------------------------------------------------------------------------------------


@dataclass
class CheckResult:
    """What a check found, stage by stage (``stages``: name, ok, line, notes, seconds); ``verdict`` None where every
    stage run passed but the check stopped before the runs (``stop_after``); the short run's records, per-engine
    rows, per-parameter rows (largest |z| first), the two engines' agreement per repeat, the speed ratio (NumPyro /
    Stan ESS/s over paired repeats) and advice. ``stopped``: the Ctrl-C or SIGTERM that ended the runs early."""

    spec: ModelSpec
    size: str
    seed: int
    out: Path
    given: tuple[Path, Path] | None
    stages: list[dict] = field(default_factory=list)
    verdict: str | None = None
    advice: list[str] = field(default_factory=list)
    records: list = field(default_factory=list)
    jobs: list = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    parameters: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    speed: Ratio | None = None
    speed_advice: list[str] = field(default_factory=list)
    settings: str = ""
    stopped: KeyboardInterrupt | None = None

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict] if self.verdict else 0


def check(request: CheckRequest, on_stage: Callable[[CheckResult], None] = lambda result: None) -> CheckResult:
    """Run the stages of ``request`` in order, stopping at the first that fails (or at ``stop_after``);
    ``on_stage`` is called with the result after each stage (a progress line). Problems with the input are
    UsageErrors before anything runs."""
    if not 2 <= request.points <= 100:
        raise UsageError(f"{option('points')} must be between 2 and 100, got {request.points}")
    if request.stop_after not in STAGES:
        raise UsageError(f"{option('stop-after')} must be one of {', '.join(STAGES)}, got {request.stop_after!r}")
    start = time.perf_counter()
    spec, size, ignored, given = target(request)
    result = CheckResult(spec, size, request.seed, out_dir(request, spec.id), given)
    data = spec.data(size, request.seed)
    findings, reference = static_stage(request, result, data, ignored, start)
    on_stage(result)
    if request.stop_after == "static":
        return result
    began = time.perf_counter()
    found = density_stage(spec, spec.density_data(size, request.seed), request.points, request.seed)
    result.stages.append(
        {
            "name": "density",
            "ok": found.ok,
            "line": as_given(found.line, spec, given),
            "notes": [],
            "seconds": time.perf_counter() - began,
        }
    )
    on_stage(result)
    if not found.ok or request.stop_after == "density":
        result.verdict = found.verdict
        return result
    if findings.dependent_supports:  # the density agrees; NumPyro's sampler cannot run the model as written
        not_sampleable(result, findings.dependent_supports)
    else:
        run_stage(request, result, reference)
    if not result.stopped:
        on_stage(result)
    return result


def static_stage(request: CheckRequest, result: CheckResult, data: dict, ignored: list[str], start: float):
    """The static stage (stanc, shapes, data; timed from ``start``): its findings and the reference the runs are
    gated on (``--reference``'s, or the model's own); a problem is a one-line UsageError in the user's own file
    names."""
    spec, given = result.spec, result.given
    try:
        findings = static_checks.require(spec, data)  # problems: one line each
        beyond = static_checks.out_of_bounds(jax_models.load(spec.jax_file), data, spec.jax_file)
        if beyond:
            raise static_checks.StaticCheckError(f"{spec.id}: {beyond}")
    except static_checks.StaticCheckError as err:
        raise static_checks.StaticCheckError(as_given(str(err), spec, given)) from None
    if request.reference is not None:  # the laid-out spec's outside truth (pair_files.TRUTH), before any run
        summary = references.from_posteriordb(request.reference, references.element_names(findings.parameters))
        header = {key: summary[key] for key in ("without", "other")}
        header["source"] = f"{summary['source']}: {summary['chains']} chains of {summary['draws']} draws"
        reference_file(spec).write_text(json.dumps({"header": header, "parameters": summary["parameters"]}))
    # the one rule the runs' gates follow: the record and the verdict judge by the same reference
    found, source = references.applicable(spec.id, result.size, None, models.data_hash(data))
    reference = None if found is None else {**found, "source": source}
    shapes = ", ".join(static_checks.shape_text(name, shape) for name, shape in findings.parameters.items())
    notes = (
        [
            f"ignored data key(s) {', '.join(ignored)}: in neither {spec.stan_file.name}'s data block nor "
            f"{spec.model_name}()'s arguments (CmdStan ignores them too)"
        ]
        if ignored
        else []
    ) + findings.notes
    header = reference["header"] if reference is not None else {}
    if header.get("without"):
        notes.append(f"the reference has no draws of {', '.join(header['without'])}: not checked against it")
    if header.get("other"):
        other = header["other"]
        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        notes.append(f"the reference's draws of {shown} are of no parameter of the model: left out")
    result.stages.append(
        {
            "name": "static",
            "ok": True,
            "seconds": time.perf_counter() - start,
            "notes": notes,
            "line": f"data {', '.join(data) or 'none'}; parameters {shapes}",
        }
    )
    return findings, reference


def not_sampleable(result: CheckResult, dependent_supports) -> None:
    """The run stage of a pair whose density agrees but whose NumPyro sites NumPyro's MCMC cannot sample."""
    names = ", ".join(f"'{name}'" for name in dependent_supports)
    result.stages.append(
        {
            "name": "run",
            "ok": False,
            "seconds": 0.0,
            "notes": [],
            "line": f"not run: NumPyro's MCMC cannot sample {names} as written",
        }
    )
    result.advice = [
        f"NumPyro: {names}: a support whose bounds are computed from another parameter; NumPyro's "
        "MCMC maps such a site's draws back through the wrong transform (or fails with an "
        "UnexpectedTracerError on parallel chains), so no run would compare the samplers. Write "
        "it in both programs as a unit-interval (or positive) parameter that the bound scales, "
        "with the log Jacobian of that scaling (Stan: target += log1m(alpha1) for "
        "beta1 = (1 - alpha1) * share)"
    ]
    result.verdict = SAMPLING_FAILED


def run_stage(request: CheckRequest, result: CheckResult, reference: dict | None) -> None:
    """Both engines' runs through the campaign's workers, then the verdict, the parameter rows and the speed;
    ``result.stopped`` set by Ctrl-C (the records written are kept)."""
    began = time.perf_counter()
    spec, given = result.spec, result.given
    result.jobs = plan(
        Request(
            suite="tiny",
            models=[spec.id],
            engines=["stan", "numpyro"],
            stan="bundled",
            size=result.size,
            chains=request.chains,
            warmup=request.warmup,
            draws=request.draws,
            repeats=request.repeats,
            seed=request.seed,
            timeout=request.timeout,
        )
    )
    result.out.mkdir(parents=True, exist_ok=True)
    try:
        run_jobs(result.jobs, result.out, request.timeout, result.records)
    except KeyboardInterrupt as stop:
        result.stopped = stop
        return
    written = result.records
    result.rows, result.pairs = engine_rows(written), agreement(written)
    result.verdict, result.advice = run_verdict(written, result.pairs, reference)
    result.settings = (
        f"{request.chains} chains x ({request.warmup} warmup + {request.draws} draws), "
        f"{request.repeats} repeat{'s' if request.repeats > 1 else ''} per engine, bundled Stan and "
        "NumPyro on the CPU"
    )
    result.stages.append(
        {
            "name": "run",
            "ok": result.verdict == SAME,
            "notes": depth_notes(written),
            "seconds": time.perf_counter() - began,
            "line": result.settings,
        }
    )
    result.parameters = parameter_rows(written, reference)
    result.speed = speed_ratio(written)
    result.speed_advice = speed_advice(result.rows, spec.stan_file, given[0] if given else spec.stan_file.name)


def depth_notes(runs: list[RunRecord]) -> list[str]:
    """A note per engine whose trees averaged at least half the most leapfrog steps its tree depth allows: NUTS
    near its limit samples slowly and, at it, stops short of a U-turn (a geometry to reparameterise; a limit an
    expert raises only knowingly)."""
    deepest: dict[str, tuple[float, int]] = {}
    for run in runs:
        if run.status == "ok" and run.metrics is not None:
            steps, limit = run.metrics.mean_leapfrog_per_draw, 2**run.config.max_treedepth - 1
            if steps >= (limit + 1) / 2 and steps > deepest.get(run.label, (0.0, 0))[0]:
                deepest[run.label] = (steps, limit)
    return [
        f"{label}: trees of {steps:,.0f} leapfrog steps a draw on average, of at most {limit:,} (max tree depth "
        f"{limit.bit_length()}): near NUTS's limit, where it samples slowly and stops before a U-turn; a "
        "reparameterisation (non-centred, rescaled) usually helps more than a deeper limit"
        for label, (steps, limit) in deepest.items()
    ]
