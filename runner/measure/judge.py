"""A run's metrics and gates from its draws, computed in the campaign's process once the worker has exited.

The worker samples and saves the draws (:mod:`stanjax.runner.measure.worker`); judging them here imports arviz-stats
(~3 s: its package pulls in xarray, pandas and scipy.stats) once per campaign instead of once per run, and keeps
that import and the diagnostics out of the worker's wall time, which the report's time to result reads as what a
user waits for. A job pinned to cores (a lane) is judged on its own cores, so that a lane's judging never runs on
the cores another lane is measuring on.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import fields
from pathlib import Path

import msgspec
import numpy as np

from stanjax import models
from stanjax.runner.core.config import Job
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings, entry
from stanjax.runner.measure import diagnose, references, validity

# The draws file's names (the API's ``sample`` returns them as arviz lays them out): a group, a slash, a name.
POSTERIOR, DIVERGING, N_STEPS = "posterior/", "sample_stats/diverging", "sample_stats/n_steps"
WARMUP_GRADIENTS = "warmup_gradients"  # the worker's JSON hands it over beside the record's part; not a record field


def save_draws(draws_file: Path, result: SampleResult) -> None:
    """The draws and the per-draw statistics the gates read, uncompressed (a worker's last step: speed over size)."""
    np.savez(
        draws_file,
        allow_pickle=True,  # numpy's default, given so that the arrays' ** cannot stand for it
        **{f"{POSTERIOR}{name}": draws for name, draws in result.draws.items()},
        **{DIVERGING: result.stats.divergent, N_STEPS: result.stats.n_leapfrog},
    )


def load_result(draws_file: Path, measured: dict, warmup_gradients: int | None) -> SampleResult:
    """The worker's SampleResult again, from its draws file and the measured part of its record."""
    with np.load(draws_file) as saved:
        draws = {key.removeprefix(POSTERIOR): saved[key] for key in saved.files if key.startswith(POSTERIOR)}
        stats = SamplerStats(
            n_leapfrog=saved[N_STEPS],
            divergent=saved[DIVERGING],
            warmup_gradients=warmup_gradients,
            step_size=measured["sampler"]["step_size"],
        )
    timings = Timings(**{f.name: measured["timings"][f.name] for f in fields(Timings)})
    return SampleResult(draws, timings, stats, measured["engine_info"])


def judge(job: Job, result: SampleResult, data_hash: str) -> dict:
    """The record's ``metrics`` and gates (``valid``, ``gates``, ``failed_gates``) of a run's result."""
    from stanjax.runner.measure.metrics import summarise  # arviz: imported where a run is judged

    spec = models.get(job.model_id)
    # Superchains only where the engine started its chains in them (the JAX engines say so; Stan does not).
    superchain_ids = job.config.superchain_ids() if result.info.get("superchains") else None
    metrics = summarise(result, [p.name for p in spec.judged], superchain_ids)
    reference, why = references.applicable(spec.id, job.config.size, job.config.resize, data_hash)
    if entry(job.engine).approximate:
        gates = validity.evaluate_approximate(metrics, result.info["khat"], reference, why)
    else:
        gates = sampler_gates(spec, result, metrics, job.config, reference, why)
    return {"metrics": msgspec.to_builtins(metrics), **gates}


def sampler_gates(spec, result, metrics, config, reference: dict | None, why: str) -> dict:
    """A sampler's gates (:func:`stanjax.runner.measure.validity.evaluate`), with the parameters' R-hat beside R-hat's
    for a model judged by its quantities, and the chains that failed R-hat named."""
    from stanjax.runner.measure.metrics import max_rhat

    gates = validity.evaluate(metrics, config.chains, config.draws, reference, why)
    if spec.judged_by_quantities:
        gates["gates"]["rhat"]["parameters_not_gated"] = validity.not_gated(
            max_rhat(result.draws, [p.name for p in spec.parameters])
        )
    if not gates["gates"]["rhat"]["passed"]:  # which chains, and how: said in the record
        found = diagnose.chain_findings({p.name: result.draws[p.name] for p in spec.judged}, result.stats.step_size)
        gates["gates"]["rhat"] |= {"chains": list(map(str, found)), "advice": diagnose.ADVICE} if found else {}
    return gates


@contextlib.contextmanager
def on_cores(core_ids: list[int] | None):
    """Within, this thread runs on ``core_ids`` only (Linux sets a thread's own mask; None: unchanged)."""
    if core_ids is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, core_ids)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
