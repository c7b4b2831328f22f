"""What a run measured, as its record keeps it beside its identity: its timings (:class:`RunTimings`), the metrics
computed from its draws (:class:`RunMetrics`), the machine's other load meanwhile (:class:`MachineLoad`) and its
energy and peak memory (:class:`RunEnergy`). The worker and the campaign fill them (through
:mod:`stanjax.runner.measure.metrics` and :mod:`stanjax.runner.measure.energy`); :class:`stanjax.runner.core.records.RunRecord` holds them.
"""

from __future__ import annotations

from typing import Any

import msgspec


class RunTimings(msgspec.Struct, kw_only=True):
    """Seconds of a completed run on the two clocks every engine keeps (:class:`stanjax.runner.core.engine_registry.Timings`):
    ``user_s``, data handed over to draws in host arrays (the ESS/s denominator), and ``sampler_s`` = ``warmup_s``
    + ``sampling_s``, the sampler's own computation; compilation in neither (``compile_s``)."""

    compile_s: float
    warmup_s: float
    sampling_s: float
    sampler_s: float
    user_s: float
    compile_cached: bool = False
    source: str = ""
    detail: dict[str, Any] = {}


class RunMetrics(msgspec.Struct, kw_only=True):
    """What :func:`stanjax.runner.measure.metrics.summarise` computes from the draws: the one diagnostics path for all engines."""

    n_parameters: int
    min_ess_bulk: float
    min_ess_tail: float
    worst_parameter: str | None
    max_rhat: float
    divergences: int
    ess_per_s: float
    gradients_sampling: int
    gradients_warmup: int | None
    ms_per_gradient: float
    ess_per_1000_gradients: float
    mean_leapfrog_per_draw: float
    posterior_mean: dict[str, float]
    posterior_mcse: dict[str, float]
    posterior_sd: dict[str, float]
    posterior_mcse_sd: dict[str, float]
    # Pareto k-hat of each parameter's draws (both tails; NaN for non-finite or constant draws): the reference gate
    # checks an sd only below runner.measure.validity.KHAT_SD_MAX. Empty in records made before it was kept.
    posterior_khat: dict[str, float] = {}
    # The superchains the chains started in (0: each chain from its own point) and, with superchains, the largest
    # nested R-hat over the parameters (None without).
    superchains: int = 0
    max_rhat_nested: float | None = None


class MachineLoad(msgspec.Struct, kw_only=True):
    """Other work on the machine during a run: the cores other processes kept busy on average (None where
    /proc/stat is unreadable), their share of the cores measured (the run's own where it was pinned; records made
    before 2026-11-27 lack both and were flagged from 0.25 cores on), the 1-minute load average at start and end,
    and the flag the report shows."""

    other_processes_cores: float | None
    load_average_start: float
    load_average_end: float
    loaded: bool
    cores_measured: int | None = None
    other_processes_share: float | None = None


class SourceEnergy(msgspec.Struct, kw_only=True):
    """What one power source measured over a run's metered span (:mod:`stanjax.runner.measure.energy`): joules and mean watts
    (joules ÷ the span's seconds) from the readings it gave, or ``missing``, why it gave none (a missing sensor is
    never recorded as 0 J); a GPU's peak memory in use, every process's, as NVML reports it."""

    joules: float | None
    mean_watts: float | None
    samples: int
    missing: str = ""
    peak_memory_mib: float | None = None


class RunEnergy(msgspec.Struct, kw_only=True):
    """The energy of a run's metered ``span`` (named in words: which calls it covers) of ``wall_s`` seconds, per
    power source (GPUs through NVML, CPU packages through RAPL); and the worker's peak resident host memory over
    its life, or its largest finished child's where larger (Stan's chains are forked children)."""

    span: str
    wall_s: float
    sources: dict[str, SourceEnergy]
    peak_host_memory_mib: float | None
