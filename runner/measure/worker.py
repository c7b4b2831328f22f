"""Runs one job in its own process: ``python -m stanjax.runner.measure.worker JOB.json RECORD.json DRAWS.npz``.

A fresh process per run gives each engine a clean start (JAX's device count is fixed at start-up) and lets
the campaign survive a crash. The worker writes the run's measured part of the record and its draws; the
campaign judges the draws (metrics and gates: :mod:`stanjax.runner.measure.judge`), adds provenance and appends
the record.

``STANJAX_FAULT=<engine>:crash`` or ``<engine>:hang`` makes a worker of that engine die or hang before it
builds its model: the hook the fault-tolerance tests use to plant a crash or a hang in one engine.

DRAWS.npz holds the draws and the sampler's per-draw statistics: ``posterior/<name>`` (chain, draw, ...) and
``sample_stats/<name>``, as arviz lays them out (the API's ``sample`` returns them).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

import msgspec

from stanjax import models
from stanjax.runner.core import run_progress
from stanjax.runner.core.config import Job
from stanjax.runner.core.engine_registry import get_engine
from stanjax.runner.measure import energy, judge


def _planted_fault(engine: str) -> None:
    fault_engine, _, fault = os.environ.get("STANJAX_FAULT", "").partition(":")
    if fault_engine != engine:
        return
    if fault == "crash":
        print(f"planted crash in the {engine} worker", flush=True)
        os._exit(3)
    if fault == "hang":
        while True:
            time.sleep(60)


def pin_to_cores(cores: int, first_core: int = 0) -> list[int]:
    """Run on ``cores`` of the CPUs this process may use, from the ``first_core``-th on (0 cores: all of them),
    before any engine starts: XLA's and TBB's thread pools size themselves from this mask, and Stan's chains
    inherit it. Every thread already running is pinned too, not only this one (Linux sets a thread's mask):
    OpenBLAS starts its pool when numpy is imported, before this, and its threads left on every core can run a
    job's BLAS on the other lane's cores (a suspect for the 16 of 110 runs the H200 campaign of 2026-11-27 flagged
    loaded). Returns the CPUs it runs on, for the record (``core_ids``)."""
    if cores:
        chosen = sorted(os.sched_getaffinity(0))[first_core : first_core + cores]
        for thread in os.listdir("/proc/self/task"):
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                os.sched_setaffinity(int(thread), chosen)
    return sorted(os.sched_getaffinity(0))


# What the energy meter spans: the sample call, whose JAX engines compile inside it (Stan compiles before it).
METERED_SPAN = "engine.sample: warmup, sampling and, for JAX engines, their JIT compile"


def run_job(job: Job, draws_file: Path) -> dict:
    """Sample, save the draws to ``draws_file``, and return the measured part of the record (data hash, engine
    details, timings, the sample call's energy) with the warmup's gradient count; the campaign judges the draws
    (:mod:`stanjax.runner.measure.judge`) once this process has exited."""
    run_progress.report(f"building the {job.engine} model")
    _planted_fault(job.engine)
    spec = models.get(job.model_id)
    data = spec.data(job.config.size, job.config.data_seed(), job.config.resize)
    engine = get_engine(job.engine, job.front_end)
    handle = engine.compile(spec, job.placement)
    config = job.config
    run_progress.report(
        f"sampling: {config.chains} chains of {config.warmup:,} warmup iterations and {config.draws:,} draws"
    )
    with energy.Meter(METERED_SPAN) as meter:
        result = engine.sample(handle, data, job.config, job.sampler_seed, job.placement)
    for parameter in spec.summarised:
        expected = (job.config.chains, job.config.draws, *parameter.resolve_shape(data))
        got = result.draws[parameter.name].shape if parameter.name in result.draws else "missing"
        if got != expected:
            raise RuntimeError(f"{job.engine} draws of '{parameter.name}': shape {got}, expected {expected}")
    run_progress.report("saving the draws")
    judge.save_draws(draws_file, result)
    timings = result.timings
    return {
        "data_hash": models.data_hash(data),
        "engine_info": result.info,
        "timings": {
            "compile_s": timings.compile_s,
            "warmup_s": timings.warmup_s,
            "sampling_s": timings.sampling_s,
            "sampler_s": timings.sampler_s,
            "user_s": timings.user_s,
            "compile_cached": timings.compile_cached,
            "source": timings.source,
            "detail": timings.detail,
        },
        "sampler": {"step_size": result.stats.step_size},
        "energy": msgspec.to_builtins(meter.result),
        judge.WARMUP_GRADIENTS: result.stats.warmup_gradients,
    }


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_the_parent(folder: Path) -> None:
    """A worker ends when the process that started it (a campaign, a check) does, however that ended (kill -9 of
    its group included): the kernel sends SIGTERM when the parent dies (PR_SET_PDEATHSIG), and on SIGTERM the
    worker removes ``folder`` and kills its own process group (itself, Stan's chains, CmdStan, httpstan's forked
    pool). Python runs that handler only between bytecodes of the main thread, which native code that never returns
    (an endless ``jax.lax.while_loop`` in XLA) never reaches; XLA lets go of the GIL meanwhile, so a thread waiting
    on the parent's pidfd does the same. A parent already gone before this is set up (``STANJAX_CAMPAIGN_PID`` is
    no longer the parent) ends the worker at once."""

    def stop(signum=None, frame=None) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    def when_the_parent_ends(pidfd: int) -> None:
        select.select([pidfd], [], [])
        stop()

    signal.signal(signal.SIGTERM, stop)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        pidfd = os.pidfd_open(os.getppid())
    except (OSError, AttributeError):  # not Linux (5.3 on): the parent's own clean-up is all there is
        return
    if os.getppid() != int(os.environ.get("STANJAX_CAMPAIGN_PID", os.getppid())):
        stop()
    threading.Thread(target=when_the_parent_ends, args=(pidfd,), daemon=True).start()


def main(argv: list[str]) -> int:
    job_path, record_path, draws_file = map(Path, argv)
    die_with_the_parent(job_path.parent)
    job = Job.from_dict(json.loads(job_path.read_text()))
    core_ids = pin_to_cores(job.cores, job.first_core)
    record = {**run_job(job, draws_file), "core_ids": core_ids}
    record_path.write_text(json.dumps(record))
    return 0


def leave(code: int) -> NoReturn:
    """A worker whose results are written leaves without the interpreter's teardown, in which JAX's runtime took
    0.3-0.6 s a run (and httpstan's pool more)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    leave(main(sys.argv[1:]))
