"""The density stage of ``stanjax check``: the density check (:mod:`stanjax.runner.pairing.density`) at the draws of a
short Stan run, and where it fails. When the log densities do not differ by one constant, each parameter is moved
alone from one point to another: a term that differs changes the offset only through the parameters it involves, so
the parameters that move it are named. A NumPyro log density that is not finite at any of the points is bad input
(a UsageError naming the site that makes it so), not a different posterior: no offset can be compared.

It runs in a stage worker (:mod:`stanjax.runner.pairing.stage_worker`), never in the check's own process.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from stanjax.models import ModelSpec, UsageError
from stanjax.runner.measure import static_checks
from stanjax.runner.pairing import density
from stanjax.runner.pairing.check_verdicts import DIFFERENT, SAMPLING_FAILED


@dataclass
class DensityVerdict:
    ok: bool
    line: str
    verdict: str | None = None  # where the stage ends the check: DIFFERENT, or SAMPLING_FAILED (Stan could not)
    compile_s: float | None = None  # Stan's program built in this stage (its first build), else None (cached)
    # the short Stan run's seconds an iteration (one chain, ``density.WARMUP`` + draws, less a run of one
    # iteration's seconds: binding the data, starting the sampler): what the estimate of the runs starts from
    iteration_s: float | None = None


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
    """The stage's verdict at ``n_points`` draws of a short Stan run (seeded by ``seed``), with the seconds Stan's
    first build of the program took here (the runs then load it from the cache)."""
    compiled = None
    try:
        with _quiet():
            compiled = density.build(spec)  # the runs' build, timed here
            began = time.perf_counter()
            points = density.posterior_points(spec, data, n_points, seed)
            sampled = time.perf_counter() - began - density.sampling_overhead_s(spec, data, seed)
            iteration_s = max(sampled, 0.0) / (density.WARMUP + n_points * density.THIN)
            result = density.check(spec, data, points)
    except Exception as err:  # a user's model may raise anything at a point; Stan raises RuntimeError, ValueError
        located = static_checks.where(err, spec.jax_file)
        if located:  # the NumPyro model raised at a point of the posterior: the port is not the Stan program
            return DensityVerdict(
                False,
                f"the NumPyro model raised {type(err).__name__}: {static_checks.first_line(err)}{located}",
                DIFFERENT,
                compile_s=compiled,
            )
        if not isinstance(err, (RuntimeError, ValueError)):
            raise
        return DensityVerdict(
            False,
            f"Stan could not build the model, sample it briefly or evaluate its draws: {static_checks.first_line(err)}",
            SAMPLING_FAILED,
            compile_s=compiled,
        )
    where = f"{n_points} points from a short Stan run"
    if result.outside:  # Stan's posterior has mass where NumPyro's support ends
        return DensityVerdict(
            False,
            f"{where}: {len(result.outside)} lie outside the NumPyro model's support ({'; '.join(result.outside[0])} "
            "at the first): Stan's posterior has mass where NumPyro's has none; compare the two sides' bounds and "
            "priors there",
            DIFFERENT,
            compile_s=compiled,
        )
    if not np.isfinite(result.log_density_numpyro).any():
        raise UsageError(f"{spec.id}: {not_finite(spec, data, points, result.log_density_numpyro)}")
    gradients = (
        "gradients not compared (the transforms differ)"
        if result.max_gradient_error is None
        else f"gradients agree to {result.max_gradient_error:.1e}"
    )
    if result.ok:
        return DensityVerdict(
            True,
            f"{where}: log densities differ by one constant (spread {result.offset_spread:.1e}), {gradients}",
            compile_s=compiled,
            iteration_s=iteration_s,
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
    return DensityVerdict(False, f"{what}; {blame}", DIFFERENT, compiled)


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


def not_finite(spec: ModelSpec, data: dict, points: list[dict], log_densities: list[float]) -> str:
    """Why the NumPyro log density is not finite at any point: the first site whose log probability is not, at the
    first point, and the line of the model's file that makes it."""
    values = ", ".join(sorted({f"{value:g}" for value in log_densities}))
    said = f"the NumPyro log density is {values} at every one of the {len(points)} points of the density check"
    found = density.non_finite_site(spec, data, points[0])
    if found is None:
        return f"{said}, though no one site's log probability is: compare the terms that combine sites"
    kind, name, total, where = found
    return f"{said} (draws of a short Stan run): {kind} '{name}' has log probability {total:g} at the first{where}"
