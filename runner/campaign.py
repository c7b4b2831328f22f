"""Runs a list of jobs, each in its own worker process, appending one record per job as it finishes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
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
        "repeat": job.repeat,
        "config": config,
        "config_hash": config.hash(),
        "sampler_seed": job.sampler_seed,
        "provenance": records.provenance(),
    }


def run_one(job: Job, timeout_s: float, log_dir: Path) -> dict:
    """The worker's part of the record, or ``status`` and the last lines of its output when it failed."""
    with tempfile.TemporaryDirectory(prefix="stanjax-job-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "record.json"
        job_file.write_text(json.dumps(job.as_dict()))
        log_file = log_dir / f"{job.model_id}.{job.engine}-{job.device}.{job.config.hash()}.{job.repeat}.log"
        start = time.perf_counter()
        with open(log_file, "w") as log:
            # Its own process group, so a timeout or Ctrl-C also ends what the worker started (Stan's chains).
            proc = subprocess.Popen([WORKER_PYTHON, "-m", "runner.worker", str(job_file), str(result_file)],
                                    cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                    env=records.worker_env())
            try:
                returncode = proc.wait(timeout=timeout_s)
                status = "ok" if returncode == 0 and result_file.exists() else "error"
            except subprocess.TimeoutExpired:
                status = "timeout"
            finally:
                _kill_group(proc)  # whatever it left running; nothing when the group has ended
        wall_s = time.perf_counter() - start
        if status == "ok":
            return {"status": "ok", "wall_s": wall_s, **json.loads(result_file.read_text())}
    tail = log_file.read_text(errors="replace").splitlines()[-ERROR_TAIL_LINES:]
    error = f"timed out after {timeout_s:g} s" if status == "timeout" else "\n".join(tail)
    return {"status": status, "wall_s": wall_s, "error": error, "log": str(log_file), **validity.failed_run()}


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
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task("starting", total=len(jobs))
        for job in jobs:
            progress.update(task, description=job.label())
            record = msgspec.convert({**base_record(job, campaign_id, study), **run_one(job, timeout_s, log_dir)},
                                     RunRecord, from_attributes=True)
            records.append(results_file, record)
            written.append(record)
            if record.status != "ok":
                progress.console.print(f"[red]{record.status}[/red]: {job.label()} (log: {record.log})")
            progress.advance(task)
        progress.update(task, description="done")
