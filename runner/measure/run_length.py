"""Runs long enough to measure (pyperf's calibration, for MCMC): where the shorter side of a pairing would sample for
under ``MIN_SAMPLER_S`` at the suite's draws, both sides draw more, the same number, until it would not.

A run of 0.1 s is mostly what is not the sampler (a clock's resolution, a process's scheduling, what counts as
compilation): eight schools' NumPyro runs of 0.08-0.14 s gave a verdict that flipped between two VMs. The sampler
time of each side comes from earlier runs of the same setup (model, sizes, engine, device, chains), scaled to the
suite's iterations; a pairing with no earlier run on any side keeps its draws, and says so; one where only some
sides ran before (an engine new to the model) is decided by those, and says which were not. Warmup stays as the
suite has it: only the draws grow, to the next tenth of the suite's draws, at most ``MAX_FACTOR`` times."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.core import environment, records
from stanjax.runner.core.config import Job
from stanjax.runner.core.records import RunRecord

MIN_SAMPLER_S = 2.0
MAX_FACTOR = 50


def sampler_seconds(history: list[RunRecord], job: Job) -> tuple[float, float] | None:
    """The median warmup and sampling seconds of the newest campaign's ok runs of ``job``'s setup, each scaled to
    the job's warmup and draws; None where there is none. The newest alone: older campaigns ran other code (eight
    schools' NumPyro clock was its wall less the compile spans until direct clocks, 0.2 s a run against 0.02 s
    since; Stan fed httpstan's diagnostic writer): a median over all of them took Stan for the shorter side and left
    the quick suite's NumPyro runs at 0.5-0.8 s."""
    sizes = models.get(job.model_id).size_kwargs(job.config.size, job.config.resize)
    setup = [
        r
        for r in history
        if r.status == "ok"
        and r.timings
        and (r.model_id, r.engine, r.device, r.precision, r.config.chains)
        == (job.model_id, job.engine, job.device, job.placement.precision, job.config.chains)
        and r.sizes == sizes
    ]
    if not setup:
        return None
    newest = max(setup, key=lambda r: r.created).campaign_id
    seen = [
        (t.warmup_s * job.config.warmup / r.config.warmup, t.sampling_s * job.config.draws / r.config.draws)
        for r in setup
        if r.campaign_id == newest and (t := r.timings)
    ]
    return statistics.median(w for w, _ in seen), statistics.median(s for _, s in seen)


def lengthen(
    jobs: list[Job], history: list[RunRecord], min_s: float = MIN_SAMPLER_S, fixed: dict | None = None
) -> tuple[list[Job], list[str]]:
    """The jobs with the draws of each pairing (a model at one size: every engine and repeat) grown where its
    shorter side would sample for under ``min_s``; a line for each pairing saying what was decided and why.
    ``fixed`` ((model, size) -> draws): pairings whose draws a campaign being resumed already ran with."""
    fixed = fixed or {}
    draws: dict[tuple[str, str], int] = {}
    lines = []
    for job in jobs:
        group = (job.model_id, job.config.size)
        if group in draws:
            continue
        if group in fixed:
            draws[group] = fixed[group]
            continue
        members = {j.engine: j for j in jobs if (j.model_id, j.config.size) == group}
        seconds = {engine: sampler_seconds(history, j) for engine, j in members.items()}
        draws[group] = job.config.draws
        name = f"{job.model_id} ({job.config.size})"
        known = {engine: s for engine, s in seconds.items() if s is not None}
        missing = ", ".join(engine for engine in seconds if engine not in known)
        if not known:
            lines.append(f"{name}: {job.config.draws:,} draws (no earlier run of {missing} to tell its length)")
            continue
        # an engine new to the model (nutpie beside Stan and NumPyro) leaves the others' lengths to decide
        unknown = f"; no earlier run of {missing}, decided by the others" if missing else ""
        engine, (warmup_s, sampling_s) = min(known.items(), key=lambda item: sum(item[1]))
        shortest = warmup_s + sampling_s
        if shortest >= min_s:
            if missing:
                lines.append(f"{name}: {job.config.draws:,} draws ({engine}'s sampler took ~{shortest:.2g} s{unknown})")
            continue
        # to the next tenth of the suite's draws: a whole factor had made 1.3x into 2x (a quick report 20 s longer)
        factor = min(MAX_FACTOR, math.ceil(round(10 * (min_s - warmup_s) / max(sampling_s, 1e-9), 6)) / 10)
        draws[group] = round(job.config.draws * factor)
        lines.append(
            f"{name}: {job.config.draws:,} → {draws[group]:,} draws a chain, both sides ({engine}'s sampler took "
            f"~{shortest:.2g} s at {job.config.draws:,} in earlier runs: runs of at least {min_s:g} s{unknown})"
        )
    return [replace(j, config=replace(j.config, draws=draws[(j.model_id, j.config.size)])) for j in jobs], lines


def for_campaign(jobs: list[Job], min_s: float, keep: Path | None = None) -> tuple[list[Job], list[str]]:
    """:func:`lengthen` with this machine's earlier runs (the checkout's results/ for its slug, and ``keep``), or,
    for a model this machine never ran, every machine's in results/ (a run's length differs between machines by
    less than the factor it decides); pairings that ``keep``'s records ran (a campaign being resumed, the nightly
    before) keep their draws, so their runs stay the same measurement."""
    folders = [f for f in (ROOT / "results" / environment.machine().slug, keep) if f is not None and f.exists()]
    history = records.read(folders, summaries=False) if folders else []
    seen = {r.model_id for r in history}
    if any(job.model_id not in seen for job in jobs) and (ROOT / "results").exists():
        history += [r for r in records.read(ROOT / "results", summaries=False) if r.model_id not in seen]
    kept = [keep / name for name in records.RESULTS_FILES if keep is not None and (keep / name).exists()]
    fixed = {(r.model_id, r.config.size): r.config.draws for r in (records.read(kept, summaries=False) if kept else [])}
    return lengthen(jobs, history, min_s, fixed)
