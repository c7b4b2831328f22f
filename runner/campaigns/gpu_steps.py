"""Running a GPU campaign's plan (:mod:`stanjax.runner.campaigns.gpu_campaign`), one step per command: the items ``out``
already holds, both lanes at once on their own cores until the step's time is spent, and the step's records packed
into ``archives/step-NN.tar.gz`` (parts small enough for a borrowed GPU's session to bring back).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import threading
import time
from pathlib import Path

from stanjax.runner.campaigns import studies
from stanjax.runner.campaigns.gpu_campaign import Item, Plan
from stanjax.runner.core import environment, records
from stanjax.runner.core.records import RunRecord
from stanjax.runner.measure.jobs import Recorder

COMPILE_ESTIMATE_S = 120.0  # Stan programs compiled in parallel on a 16-core box (22 took 5.4 min on 2 cores)
ARCHIVE_LIMIT_BYTES = 16 * 2**20  # what a borrowed GPU's session brings back: files of at most 16 MiB
PLAN_FILE, COMPILE_FILE, ARCHIVES = "plan.json", "compile.json", "archives"
ESTIMATES_FILE = "estimates.json"  # every run's estimate beside its actual time, step by step
ARCHIVED_FILE = "archived.json"  # how many bytes of each records file earlier steps' archives hold


def done_items(plan: Plan, out: Path) -> set[int]:
    """Indexes (in ``all_items`` order) of the items ``out`` already holds an ok record or a measurement of: in
    its records files or in earlier steps' records unpacked there (every ``*.jsonl`` in it)."""
    files = sorted(out.glob("*.jsonl"))
    done = records.done(records.read(files, summaries=False)) if files else set()
    measured = {
        (m["backend"], m["device"], m["chains"])
        for m in (records.read_measurements(files) if files else [])
        if m.get("measure") == "rwmh"
    }
    return {
        index
        for index, item in enumerate(all_items(plan))
        if (item.job and item.job.key() in done)
        or (item.rwmh and (item.rwmh[1], item.rwmh_device(), item.rwmh[0]) in measured)
    }


def campaign_to_continue(out: Path, plan: Plan) -> tuple[str | None, str]:
    """The campaign ID of the newest run an earlier step left in ``out`` (its own records or unpacked ones), if
    that step ran on this machine and seeded its runs as ``plan`` seeds them (the plan holds the campaign's
    entropy), and "": a GPU campaign's steps are one campaign, so a block whose runs fall in two steps still pairs,
    its runs sharing their sampler seed (as ``stanjax run --resume``). None where there is none; None and why where
    it ran on another machine (a block pairs runs of one machine) or was seeded otherwise (a plan made anew)."""
    files = sorted(out.glob("*.jsonl"))
    runs = records.read(files) if files else []
    if not runs:
        return None, ""
    newest = max(runs, key=lambda r: r.created)
    if not environment.same_machine(newest.provenance.machine, environment.machine()):
        return None, f"the steps before ran on {newest.machine}: this machine's runs start a campaign of their own"
    seeds = {item.job.key(): item.job.sampler_seed for item in all_items(plan) if item.job}
    if any(seeds.get(r.key(), r.sampler_seed) != r.sampler_seed for r in runs if r.campaign_id == newest.campaign_id):
        return None, (
            f"the steps before ({newest.campaign_id}) seeded their runs otherwise than this plan: its runs start a "
            "campaign of their own"
        )
    return newest.campaign_id, ""


def step_number(out: Path) -> int:
    """This step's number: one more than the highest of the earlier steps' archives or unpacked records."""
    names = [path.name for path in [*out.glob("step-*.jsonl"), *(out / ARCHIVES).glob("step-*.tar.gz")]]
    return 1 + max((int(name[5:7]) for name in names if name[5:7].isdigit()), default=0)


def all_items(plan: Plan) -> list[Item]:
    return [item for unit in plan.units for item in unit.items]


def lanes_left(plan: Plan, out: Path) -> dict[str, list[Item]]:
    done = done_items(plan, out)
    return {
        lane: [item for index, item in enumerate(all_items(plan)) if item.lane == lane and index not in done]
        for lane in ("gpu", "cpu")
    }


def lane_cpus(plan: Plan, lane: str) -> list[int]:
    """The CPUs of a lane: the first ``gpu_cores`` usable ones for the GPU lane, the rest for the CPU lane."""
    usable = sorted(os.sched_getaffinity(0))[: plan.cores]
    return usable[: plan.gpu_cores] if lane == "gpu" else usable[plan.gpu_cores :]


def measure_rwmh(item: Item, cpus: list[int], out: Path, timeout_s: float) -> dict:
    """The chains study's random-walk Metropolis measurement of ``item``, on the lane's CPUs, appended to
    ``out``'s measurements."""
    assert item.rwmh is not None, "measure_rwmh is given the items without a job: the random-walk ones"
    chains, backend = item.rwmh
    env = {
        "JAX_PLATFORMS": "cuda" if item.rwmh_device() == "gpu" else "cpu",
        "STANJAX_CPUS": ",".join(map(str, cpus)),
    }
    row = studies.measure(["rwmh", "gpu", str(chains), backend], env, timeout_s)
    assert isinstance(row, dict), "an rwmh measurement prints one JSON object"
    records.append(out / records.MEASUREMENTS_FILE, records.measurement("chains", {"measure": "rwmh", **row}))
    return row


def run_step(
    plan: Plan,
    out: Path,
    deadline: float,
    timeout_s: float,
    written: list[RunRecord],
    say=print,
    rerun_loaded: bool = True,
    timed: list[dict] | None = None,
) -> dict[str, list[Item]]:
    """Run both lanes at once until each has nothing left or no time for its next item (``deadline``: a
    time.monotonic() value); returns what is left per lane. Every finished run is on disk as it ends; a run
    measured on a loaded machine is run once more where the step has time for it (``rerun_loaded``). Each run's
    estimate, its basis and its actual wall time are added to ``timed``."""
    timed = [] if timed is None else timed
    campaign_id, why = campaign_to_continue(out, plan)
    if why:
        say(why)
    recorder = Recorder(out, timeout_s, written, campaign_id=campaign_id)
    lanes = lanes_left(plan, out)
    left: dict[str, list[Item]] = {}
    lock = threading.Lock()

    def lane_loop(lane: str, items: list[Item]) -> None:
        cpus = lane_cpus(plan, lane)
        for index, item in enumerate(items):
            remaining = deadline - time.monotonic()
            if item.estimate_s > remaining:
                with lock:
                    left[lane] = items[index:]
                say(
                    f"{lane} lane: {len(items) - index} item(s) left for the next step (next: about "
                    f"{item.estimate_s:.0f} s, {max(remaining, 0):.0f} s left in this one)"
                )
                return
            say(f"{lane} lane: {item.label()} (about {item.estimate_s:.0f} s)")
            if item.job:
                record = recorder.run(item.job, item.study, min(timeout_s, remaining))
                left_s = deadline - time.monotonic()
                load = record.load if rerun_loaded and record.status == "ok" else None
                if load and load.loaded and item.estimate_s <= left_s:
                    # as `stanjax run --reruns` does, once, where the step has time for it: a loaded run enters no
                    # ratio, and a block without its clean run is lost
                    say(
                        f"{lane} lane: loaded ({load.other_processes_cores:.2f} cores busy with other work): "
                        f"{item.label()} is run again; the loaded record is kept, marked"
                    )
                    record = recorder.run(item.job, item.study, min(timeout_s, left_s))
                verdict = (
                    ("valid" if record.valid else "INVALID: " + ", ".join(record.failed_gates))
                    if record.status == "ok"
                    else f"{record.status.upper()} (log: {record.log})"
                )
                say(
                    f"{lane} lane: {verdict}: {item.label()} in {record.wall_s:.0f} s (estimated {item.estimate_s:.0f} s)"
                )
                with lock:
                    timed.append(
                        {
                            "lane": lane,
                            "run": item.label(),
                            "estimate_s": item.estimate_s,
                            "basis": item.basis,
                            "actual_s": record.wall_s,
                            "status": record.status,
                        }
                    )
            else:
                try:
                    row = measure_rwmh(item, cpus, out, min(timeout_s, remaining))
                    say(f"{lane} lane: {item.label()}: {row['draws_per_s']:.3g} draws/s in {row['wall_s']:.1f} s")
                except (RuntimeError, subprocess.TimeoutExpired) as err:
                    say(f"{lane} lane: FAILED {item.label()}: {err}")
        with lock:
            left[lane] = []

    threads = [
        threading.Thread(target=lane_loop, args=(lane, items), name=f"{lane}-lane", daemon=True)
        for lane, items in lanes.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():  # join in slices, so Ctrl-C and SIGTERM reach this thread
            thread.join(0.5)
    return left


def estimates_summary(timed: list[dict]) -> str:
    """How well a step's estimates held: how many runs took between half and twice their estimate, and the spread
    of actual ÷ estimate (the planner's aim: 9 runs in 10 within 2×)."""
    ratios = sorted(t["actual_s"] / t["estimate_s"] for t in timed if t["status"] == "ok" and t["estimate_s"] > 0)
    if not ratios:
        return "estimates: no completed run to set beside its estimate"
    within = sum(0.5 <= r <= 2 for r in ratios)
    return (
        f"estimates: {within} of {len(ratios)} completed runs took within 2× of their estimate (actual ÷ estimate: "
        f"median {ratios[len(ratios) // 2]:.2g}, {ratios[0]:.2g} to {ratios[-1]:.2g})"
    )


def pack(out: Path, step: int, offsets: dict[str, int], limit: int = ARCHIVE_LIMIT_BYTES) -> list[Path]:
    """The step's new records and measurements (what each file gained since ``offsets``), the plan, the compile
    times and the logs of failed runs, as ``archives/step-NN.tar.gz``; split into parts of at most ``limit``
    bytes when bigger (records are whole lines, never cut). Unpacked into one folder, the parts' ``*.jsonl``
    files are the campaign's records (``stanjax report`` reads every one)."""
    lines = {
        name: (out / name).read_bytes()[offsets.get(name, 0) :].splitlines(keepends=True)
        for name in (records.RESULTS_FILE, records.MEASUREMENTS_FILE)
        if (out / name).exists()
    }
    extras = [out / name for name in (PLAN_FILE, COMPILE_FILE, ESTIMATES_FILE, "compile.log") if (out / name).exists()]
    failed_logs = [
        Path(r["log"])
        for r in _json_lines(lines.get(records.RESULTS_FILE, []))
        if r.get("log") and Path(r["log"]).exists()
    ]
    (out / ARCHIVES).mkdir(exist_ok=True)
    for old in (out / ARCHIVES).glob(f"step-{step:02d}*.tar.gz"):
        old.unlink()

    def write(path: Path, chunks: dict[str, list[bytes]], with_extras: bool) -> int:
        with tarfile.open(path, "w:gz") as tar:
            for name, chunk in chunks.items():
                data = b"".join(chunk)
                info = tarfile.TarInfo(f"step-{step:02d}-{name}")
                info.size, info.mtime = len(data), int(time.time())
                tar.addfile(info, io.BytesIO(data))
            if with_extras:
                for extra in extras:
                    tar.add(extra, arcname=extra.name)
                for log in failed_logs:
                    tar.add(log, arcname=f"logs/{log.name}")
        return path.stat().st_size

    most_rows = max((len(rows) for rows in lines.values()), default=1)
    parts = 1
    while True:
        paths, sizes = [], []
        for part in range(parts):
            suffix = f"-part{part + 1}" if parts > 1 else ""
            chunks = {
                name.replace(".jsonl", f"{suffix}.jsonl"): rows[
                    part * len(rows) // parts : (part + 1) * len(rows) // parts
                ]
                for name, rows in lines.items()
            }
            paths.append(out / ARCHIVES / f"step-{step:02d}{suffix}.tar.gz")
            sizes.append(write(paths[-1], chunks, with_extras=part == 0))
        if max(sizes) <= limit:
            return paths
        for path in paths:
            path.unlink()
        if parts >= most_rows:
            raise ValueError(f"a record of step {step} packs to more than {limit} bytes on its own")
        parts = min(2 * parts, most_rows)


def _json_lines(lines: list[bytes]) -> list[dict]:
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows
