"""Runs a list of jobs, each in its own worker process, appending one record per job as it finishes."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import msgspec

import models
from models import ROOT
from runner import records, validity
from runner.config import Job
from runner.records import RunRecord

ERROR_TAIL_LINES = 20
# One spelling of the interpreter for every worker: httpstan's model cache key includes the executable's path,
# so `.venv/bin/python` and `.venv/bin/python3.12` would each compile every Stan model.
WORKER_PYTHON = str(Path(sys.prefix) / "bin" / "python")


def base_record(job: Job, campaign_id: str, study: str = "") -> dict:
    """The part of a run's record known before it runs: identity, sizes, seeds, provenance."""
    config = job.config
    return {
        "schema_version": records.SCHEMA_VERSION,
        "kind": "run",
        "run_id": uuid.uuid4().hex,
        "campaign_id": campaign_id,
        "created": records.now(),
        "study": study,
        "model_id": job.model_id,
        "size": config.size,
        "sizes": models.get(job.model_id).size_kwargs(config.size, config.resize),
        "engine": job.engine,
        "front_end": job.front_end,
        "device": job.device,
        "precision": job.placement.precision,
        "chain_method": job.placement.chain_method,
        "threads_per_chain": job.placement.threads_per_chain,
        "cores": job.cores or None,
        "repeat": job.repeat,
        "config": config,
        "config_hash": config.hash(),
        "sampler_seed": job.sampler_seed,
        "provenance": records.provenance(),
    }


def run_one(job: Job, timeout_s: float, log_dir: Path) -> dict:
    """The worker's part of the record, or ``status`` and the last lines of its output when it failed; with the
    load of the machine beside it either way."""
    with tempfile.TemporaryDirectory(prefix="stanjax-job-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "record.json"
        job_file.write_text(json.dumps(job.as_dict()))
        log_file = log_dir / f"{job.model_id}.{job.engine}-{job.device}.{job.config.hash()}.{job.repeat}.log"
        before = load_sample()
        start = time.perf_counter()
        with open(log_file, "w") as log:
            # Its own process group, so a timeout or Ctrl-C also ends what the worker started (Stan's chains); the
            # worker ends itself if this process dies (runner.worker.die_with_the_campaign).
            proc = subprocess.Popen([WORKER_PYTHON, "-m", "runner.worker", str(job_file), str(result_file)],
                                    cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={"OPENBLAS_NUM_THREADS": str(job.blas_threads()), **records.worker_env(),
                                         "STANJAX_CAMPAIGN_PID": str(os.getpid())})
            try:
                returncode = proc.wait(timeout=timeout_s)
                status = "ok" if returncode == 0 and result_file.exists() else "error"
            except subprocess.TimeoutExpired:
                status = "timeout"
            finally:
                _kill_group(proc)  # whatever it left running; nothing when the group has ended
        wall_s = time.perf_counter() - start
        load = machine_load(before, load_sample(), wall_s)
        if status == "ok":
            return {"status": "ok", "wall_s": wall_s, "load": load, **json.loads(result_file.read_text())}
    tail = log_file.read_text(errors="replace").splitlines()[-ERROR_TAIL_LINES:]
    if status == "timeout":
        error = f"timed out after {timeout_s:g} s"
    elif proc.returncode < 0:  # a signal: say which, whatever the log holds
        error = "\n".join([f"worker killed by {signal.Signals(-proc.returncode).name}", *tail])
    else:
        error = "\n".join(tail)
    return {"status": status, "wall_s": wall_s, "error": error, "log": str(log_file), "load": load,
            **validity.failed_run()}


# A run is flagged as measured on a loaded machine when other processes kept, on average over its wall time, more
# than this many cores busy.
LOADED_CORES = 0.25


def load_sample() -> dict:
    """What :func:`machine_load` needs at one instant: the machine's busy CPU seconds since boot (/proc/stat; None
    where unreadable), this process's and its reaped children's CPU seconds, the 1-minute load average."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        busy = (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    except (OSError, ValueError, IndexError):
        busy = None
    ours = sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))
    return {"busy_s": busy, "ours_s": ours, "load_average": os.getloadavg()[0]}


def machine_load(before: dict, after: dict, wall_s: float) -> dict:
    """How busy the machine was with other work during a run: the cores that processes other than this campaign
    and its worker (Stan's chains included, once reaped) kept busy on average, and the load averages."""
    others = None
    if before["busy_s"] is not None and after["busy_s"] is not None and wall_s > 0:
        others = max(0.0, (after["busy_s"] - before["busy_s"]) - (after["ours_s"] - before["ours_s"])) / wall_s
    return {"other_processes_cores": others, "load_average_start": before["load_average"],
            "load_average_end": after["load_average"], "loaded": others is not None and others > LOADED_CORES}


class Stopped(KeyboardInterrupt):
    """SIGTERM (or another stop signal) during a campaign: handled as Ctrl-C is, with the signal's exit code."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stopped_by(signum: int):
    """Within: ``signum`` stops the campaign the way Ctrl-C does (records kept, the worker ended, one line)."""
    def handler(received, frame):
        raise Stopped(received)

    previous = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, previous)


def interrupted(stop: KeyboardInterrupt, written: list, jobs: list, out: Path) -> int:
    """One line on what was kept; exit code 128 + the signal (130 for Ctrl-C, 143 for SIGTERM)."""
    signum = getattr(stop, "signum", signal.SIGINT)  # a plain KeyboardInterrupt is Ctrl-C
    print(f"interrupted ({signal.Signals(signum).name}): {len(written)} of {len(jobs)} runs finished and recorded "
          f"in {out}")
    return 128 + signum


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's process group, then reap the worker."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_campaign(jobs: list[Job], out_dir: Path, timeout_s: float, written: list[RunRecord],
                 study: str = "") -> None:
    """Run every job in order, adding each record to ``written`` once it is on disk; a failed job becomes a
    record and the campaign goes on. ``study`` names the scaling study the runs belong to ("" for campaigns)."""
    campaign_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    results_file = out_dir / records.RESULTS_FILE
    log_dir = out_dir / "logs" / campaign_id
    log_dir.mkdir(parents=True, exist_ok=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with stopped_by(signal.SIGTERM), Progress(*columns, transient=False) as progress:
        task = progress.add_task("starting", total=len(jobs))
        for job in jobs:
            progress.update(task, description=job.label())
            record = msgspec.convert({**base_record(job, campaign_id, study), **run_one(job, timeout_s, log_dir)},
                                     RunRecord, from_attributes=True)
            try:
                records.append(results_file, record)
            except OSError as err:  # a full disk, say: what is on disk stays readable; say so in one line
                raise records.RecordsError(f"cannot append to {results_file}: {err.strerror or err}; "
                                           f"{len(written)} run(s) of this campaign recorded before") from None
            written.append(record)
            if record.status != "ok":
                progress.console.print(f"[red]{record.status}[/red]: {job.label()} (log: {record.log})")
            progress.advance(task)
        progress.update(task, description="done")
