"""Runs a list of jobs, each in its own worker process, appending one record per job as it finishes."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path

import msgspec
from rich import get_console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.core import environment, folder_lock, records, run_progress
from stanjax.runner.core.config import Job
from stanjax.runner.core.records import RunRecord
from stanjax.runner.measure import judge, validity
from stanjax.runner.measure.stopping import stop_signals_held, stopped_by

ERROR_TAIL_LINES = 20
# One interpreter path for every worker: httpstan's cache key holds it (`python`, `python3.12`: two compiles each).
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
        "block": job.block,
        "pairing": job.pairing(campaign_id),
        "isa": job.placement.isa,
        "program": job.placement.program,
        "config": config,
        "config_hash": config.hash(),
        "sampler_seed": job.sampler_seed,
        "entropy": job.entropy,
        "provenance": environment.provenance(),
    }


def run_one(
    job: Job, timeout_s: float, log_dir: Path, draws_file: Path | None = None, show: run_progress.Show | None = None
) -> dict:
    """The worker's part of the record judged here (:mod:`stanjax.runner.measure.judge`), or ``status`` and its log's
    last lines when it failed; with the load on the job's cores beside it either way; the draws kept in ``draws_file``;
    the run's progress, as its log reports it, passed to ``show`` while it runs."""
    core_ids = job_core_ids(job)
    with tempfile.TemporaryDirectory(prefix="stanjax-job-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "record.json"
        draws_file = draws_file or Path(tmp) / "draws.npz"
        job_file.write_text(json.dumps(job.as_dict()))
        log_file = log_dir / job.log_name()
        before = load_sample(core_ids)
        start = time.perf_counter()
        with open(log_file, "w") as log:
            # Its own process group, so a timeout or Ctrl-C also ends what the worker started (Stan's chains); the
            # worker ends itself if this process dies (runner.measure.worker.die_with_the_parent).
            proc = subprocess.Popen(
                [WORKER_PYTHON, "-m", "stanjax.runner.measure.worker", *map(str, (job_file, result_file, draws_file))],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={
                    "OPENBLAS_NUM_THREADS": str(job.blas_threads()),
                    **environment.worker_env(),
                    "STANJAX_CAMPAIGN_PID": str(os.getpid()),
                },
            )
            worker_cpu_s = 0.0
            try:
                worker_cpu_s = _wait(proc, timeout_s, run_progress.LogReader(log_file), show)
                status = "ok" if proc.returncode == 0 and result_file.exists() else "error"
            except subprocess.TimeoutExpired:
                status = "timeout"
            finally:
                worker_cpu_s += _kill_group(proc)  # whatever it left running; nothing when the group has ended
        wall_s = time.perf_counter() - start
        after = load_sample(core_ids)
        after["ours_s"] += worker_cpu_s
        load = machine_load(before, after, wall_s)
        if status == "ok":
            measured = json.loads(result_file.read_text())
            warmup_gradients = measured.pop(judge.WARMUP_GRADIENTS)
            try:
                with judge.on_cores(core_ids):
                    result = judge.load_result(draws_file, measured, warmup_gradients)
                    judged = judge.judge(job, result, measured["data_hash"])
            except Exception:  # the run's failure, not the campaign's: its record says where
                with open(log_file, "a") as log:
                    log.write(f"judging the draws failed:\n{traceback.format_exc()}")
                status = "error"
            else:
                return {"status": "ok", "wall_s": wall_s, "load": load, **measured, **judged}
    lines = log_file.read_text(errors="replace").splitlines()
    reports = [line for line in lines if line.startswith(run_progress.PREFIX)]
    tail = [line for line in lines if not line.startswith(run_progress.PREFIX)][-ERROR_TAIL_LINES:]
    if status == "timeout":  # with how far it got
        error = f"timed out after {timeout_s:g} s" + (f" ({reports[-1]})" if reports else "")
    elif proc.returncode < 0:  # a signal: say which, whatever the log holds
        error = "\n".join([f"worker killed by {signal.Signals(-proc.returncode).name}", *tail])
    else:
        error = "\n".join(tail)
    return {
        "status": status,
        "wall_s": wall_s,
        "error": error,
        "log": str(log_file),
        "load": load,
        **validity.failed_run(),
    }


def job_core_ids(job: Job) -> list[int] | None:
    """The CPUs a job's worker is pinned to (as runner.measure.worker pins it); None for an unpinned job."""
    if not job.cores:
        return None
    return sorted(os.sched_getaffinity(0))[job.first_core : job.first_core + job.cores]


def _wait(
    proc: subprocess.Popen,
    timeout_s: float,
    log: run_progress.LogReader | None = None,
    show: run_progress.Show | None = None,
) -> float:
    """Wait for the worker, passing its newest progress report to ``show`` once every run_progress.POLL_S; its CPU
    seconds (its own and its reaped children's: Stan's chains), from wait4, so a run's load counts this worker
    alone as ours even while another lane's worker runs beside it."""
    start = time.monotonic()
    deadline, polled, newest = start + timeout_s, start, None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime
        now = time.monotonic()
        if now > deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        if log and show and now - polled >= run_progress.POLL_S:
            polled, newest = now, log.newest() or newest
            if newest:
                show(newest, now - start)
        time.sleep(0.01)


# A run is flagged as measured on a loaded machine when other processes kept, on average over its wall time, more
# than this share of the cores it was measured on busy: 0.1 cores of a 2-core run's (a quiet 2-core VM shows at
# most 0.016; a fixed 0.25 cores let 0.2 slow two committed runs by ~20 % unflagged), 0.7 of a 14-core lane's.
LOADED_SHARE = 0.05


def load_sample(core_ids: list[int] | None = None) -> dict:
    """What :func:`machine_load` needs at one instant: the busy CPU seconds since boot of ``core_ids`` (every CPU
    for None; /proc/stat; None where unreadable) and how many cores they are, this process's CPU seconds (a run's
    worker's are added after it ends), the 1-minute load average."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
        every = [line.split(maxsplit=1)[0] for line in lines if line[:3] == "cpu" and line[3:4].isdigit()]
        wanted = {"cpu"} if core_ids is None else {f"cpu{core}" for core in core_ids}
        rows = [[int(x) for x in line.split()[1:9]] for line in lines if line.split(maxsplit=1)[0] in wanted]
        if len(rows) != len(wanted):
            raise ValueError("a CPU missing from /proc/stat")
        busy = sum(sum(f) - f[3] - f[4] for f in rows) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
        cores = len(every) if core_ids is None else len(core_ids)
    except (OSError, ValueError, IndexError):
        busy, cores = None, None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "busy_s": busy,
        "cores": cores,
        "ours_s": usage.ru_utime + usage.ru_stime,
        "load_average": os.getloadavg()[0],
    }


def machine_load(before: dict, after: dict, wall_s: float) -> dict:
    """How busy the machine (or the run's own cores) was with other work during a run: the cores that processes
    other than this campaign and the run's worker (Stan's chains included) kept busy on average, their share of
    the cores measured (loaded above ``LOADED_SHARE``), and the load averages."""
    others = share = None
    if before["busy_s"] is not None and after["busy_s"] is not None and wall_s > 0:
        others = max(0.0, (after["busy_s"] - before["busy_s"]) - (after["ours_s"] - before["ours_s"])) / wall_s
        share = others / before["cores"] if before.get("cores") else None
    return {
        "other_processes_cores": others,
        "cores_measured": before.get("cores"),
        "other_processes_share": share,
        "load_average_start": before["load_average"],
        "load_average_end": after["load_average"],
        "loaded": share is not None and share > LOADED_SHARE,
    }


def _kill_group(proc: subprocess.Popen) -> float:
    """SIGKILL the worker's process group, then reap the worker if it is still there: its CPU seconds, or 0 when
    it had already been reaped."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc.returncode is not None:
        return 0.0
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def busy_elsewhere(core_ids: list[int] | None = None, window_s: float = 2.0) -> float | None:
    """The share of ``core_ids``' cores (all for None) other processes keep busy over the next ``window_s``
    seconds; None where /proc/stat is unreadable."""
    before = load_sample(core_ids)
    time.sleep(window_s)
    return machine_load(before, load_sample(core_ids), window_s)["other_processes_share"]


def wait_for_quiet(core_ids: list[int] | None, max_wait_s: float, say) -> float | None:
    """Wait, up to ``max_wait_s``, until other processes keep at most ``LOADED_SHARE`` of ``core_ids`` busy; the
    last busy share (at most the threshold once quiet; None where unknown). ``say`` gets one line while waiting."""
    deadline = time.monotonic() + max_wait_s
    said = False
    while True:
        others = busy_elsewhere(core_ids)
        if others is None or others <= LOADED_SHARE or time.monotonic() >= deadline:
            return others
        if not said:
            say(
                f"waiting for a quiet machine: other processes keep {others:.0%} of the cores busy "
                f"(up to {max_wait_s:g} s)"
            )
            said = True


class Recorder:
    """Runs jobs and appends each one's record as it finishes, into ``out_dir``'s results file, under one campaign
    ID and log folder; safe to call from several threads (lanes that run at once on disjoint cores).

    Clean or rerun: a run measured on a loaded machine (``machine_load``) stays in the records, marked, and is run
    again in its block, up to ``reruns`` times, each after waiting (up to ``quiet_wait_s``) for other processes to
    quiet down; ``rerun`` lists what was rerun and why. ``campaign_id`` continues a campaign (``--resume``): its
    blocks pair across the interruption."""

    def __init__(
        self,
        out_dir: Path,
        timeout_s: float,
        written: list[RunRecord],
        reruns: int = 0,
        quiet_wait_s: float = 0.0,
        campaign_id: str | None = None,
        say=print,
    ):
        self.campaign_id = campaign_id or new_campaign_id()
        self.out_dir, self.results_file = out_dir, out_dir / records.RESULTS_FILE
        self.log_dir = out_dir / "logs" / self.campaign_id
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.timeout_s, self.written = timeout_s, written
        self.reruns, self.quiet_wait_s, self.say = reruns, quiet_wait_s, say
        self.rerun: list[str] = []
        self._lock = threading.Lock()

    def run(
        self,
        job: Job,
        study: str = "",
        timeout_s: float | None = None,
        draws_file: Path | None = None,
        show: run_progress.Show | None = None,
    ) -> RunRecord:
        """Run ``job`` (stopped after ``timeout_s``, default the recorder's) and append its record, rerunning it
        while it was measured on a loaded machine and reruns are left; a failed job becomes a record too.
        ``study`` names the scaling study the run belongs to ("" for campaigns); ``draws_file`` receives the
        draws (the API's ``sample``); ``show`` its progress while it runs. The last record. Under the folder's lock: its caller's, where it holds it."""
        for attempt in range(self.reruns + 1):
            with folder_lock.held(self.out_dir):
                record = self._run_once(job, study, timeout_s, draws_file, show)
            if record.status != "ok" or not (record.load and record.load.loaded) or attempt == self.reruns:
                return record
            busy = record.load.other_processes_cores
            self.rerun.append(f"{job.label()}: other processes kept {busy:.2f} cores busy")
            self.say(
                f"loaded ({busy:.2f} cores busy with other work): {job.label()} is run again "
                f"({attempt + 1} of {self.reruns}); the loaded record is kept, marked"
            )
            wait_for_quiet(job_core_ids(job), self.quiet_wait_s, self.say)
        return record

    def _run_once(
        self, job: Job, study: str, timeout_s: float | None, draws_file: Path | None, show: run_progress.Show | None
    ) -> RunRecord:
        outcome = run_one(job, self.timeout_s if timeout_s is None else timeout_s, self.log_dir, draws_file, show)
        record = msgspec.convert(
            {**base_record(job, self.campaign_id, study), **outcome}, RunRecord, from_attributes=True
        )
        with self._lock, stop_signals_held():
            try:
                records.append(self.results_file, record)
            except OSError as err:  # a full disk, say: what is on disk stays readable; say so in one line
                raise records.RecordsError(
                    f"cannot append to {self.results_file}: {err.strerror or err}; "
                    f"{len(self.written)} run(s) of this campaign recorded before"
                ) from None
            self.written.append(record)
        return record


def draws_file(draws_dir: Path, job: Job) -> Path:
    """Where ``run_jobs`` keeps a job's draws when asked to: its log's name, as a .npz file."""
    return draws_dir / Path(job.log_name()).with_suffix(".npz").name


def new_campaign_id() -> str:
    """A campaign's id: its start (UTC) and 6 random hex digits."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def run_jobs(
    jobs: list[Job],
    out_dir: Path,
    timeout_s: float,
    written: list[RunRecord],
    study: str = "",
    reruns: int = 0,
    quiet_wait_s: float = 0.0,
    campaign_id: str | None = None,
    draws_dir: Path | None = None,
) -> list[str]:
    """Run every job in order, adding each record to ``written`` once it is on disk; a failed job becomes a
    record and the campaign goes on; a loaded run is run again (``Recorder``), and with reruns the campaign first
    waits for a quiet machine. ``study`` names the scaling study the runs belong to ("" for campaigns); each run's
    draws are kept in ``draws_dir`` where it is given (``draws_file``). What was rerun, and why. Under ``out_dir``'s
    lock throughout (one writer per folder: ``folder_lock``)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    terminal = get_console().is_terminal  # a log (nohup, CI) gets a line per run, not a progress bar's last frame
    progress = Progress(*columns, transient=False, disable=not terminal)
    with stopped_by(signal.SIGTERM), folder_lock.held(out_dir), progress:
        recorder = Recorder(out_dir, timeout_s, written, reruns, quiet_wait_s, campaign_id, progress.console.print)
        if reruns and jobs:
            wait_for_quiet(job_core_ids(jobs[0]), quiet_wait_s, progress.console.print)
        task = progress.add_task("starting", total=len(jobs))
        for done, job in enumerate(jobs, 1):
            progress.update(task, description=job.label())
            label = job.label()
            show = (
                run_progress.on_bar(label, progress, task)
                if terminal
                else run_progress.in_log(label, progress.console.print)
            )
            record = recorder.run(job, study, draws_file=draws_file(draws_dir, job) if draws_dir else None, show=show)
            if record.status != "ok":
                progress.console.print(f"[red]{record.status}[/red]: {job.label()} (log: {record.log})")
            if not terminal:
                took = "" if record.wall_s is None else f", {record.wall_s:.0f} s"
                progress.console.print(
                    f"run {done} of {len(jobs)}: {job.label()}: {record.status}{took}",
                    highlight=False,
                    soft_wrap=True,
                )
            progress.advance(task)
        progress.update(task, description="done")
    return recorder.rerun
