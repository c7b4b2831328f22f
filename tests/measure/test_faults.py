"""Faults never lose a result and leave nothing running: kill -9 then --resume, SIGTERM, Ctrl-C, a worker killed,
a hanging run, a crashing engine, a full disk. Marked ``faults`` (``pytest -m faults`` runs them alone)."""

import errno
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from stanjax.models import ROOT
from stanjax.runner.core import records

pytestmark = [pytest.mark.slow, pytest.mark.stan, pytest.mark.faults]  # campaigns of Stan runs
EIGHT = "eight_schools-eight_schools_noncentered"


def three_repeats(out):
    return ["run", "--suite", "tiny", "--models", EIGHT, "--engines", "stan", "--repeats", "3", "--out", str(out)]


def tagged(tag: str) -> list[int]:
    """Processes whose environment carries STANJAX_TEST_TAG=tag: what one test started, whatever else runs beside
    it (another test process, a concurrent campaign), and whatever they were reparented to."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"STANJAX_TEST_TAG={tag}".encode() in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:  # ended meanwhile, or not ours to read
            pass
    return found


def start_and_wait_for_a_record(args, out, stdout, tag: str = "", tmp: Path | None = None):
    """Start a campaign in its own process group (tagged with ``tag`` in its environment, which its workers
    inherit; its temporary folders in ``tmp``); return once its first record is on disk."""
    # KeyboardInterrupt on SIGINT in the child: a shell's background job (`make test &`) ignores SIGINT, and Python
    # installs its handler only when SIGINT is not ignored at start-up. Set in the child's own code, not with
    # preexec_fn: that would fork this (JAX-loaded) test process instead of spawning.
    start = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv = ['stanjax', *sys.argv[1:]]; runpy.run_module('stanjax.runner.commands.cli', run_name='__main__')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", start, *args],
        cwd=ROOT,
        start_new_session=True,
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "STANJAX_TEST_TAG": tag, **({"TMPDIR": str(tmp)} if tmp else {})},
    )
    if tmp:
        tmp.mkdir(exist_ok=True)
    results = out / records.RESULTS_FILE
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 1):
        time.sleep(0.2)
    return proc


def stanjax(*args, env=None, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "stanjax.runner.commands.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        **kwargs,
    )


def stanjax_folders(tmp: Path) -> list[str]:
    return [p.name for p in tmp.iterdir() if p.name.startswith("stanjax-")]


def gone(tag: str, seconds: float = 10) -> bool:
    """True once no process of ``tag`` is left (a worker ends itself within moments of its campaign)."""
    deadline = time.monotonic() + seconds
    while tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not tagged(tag)


def test_kill_9_mid_campaign_then_resume_loses_nothing_and_duplicates_nothing(tmp_path):
    out = tmp_path / "results"
    args = three_repeats(out)
    proc = start_and_wait_for_a_record(args, out, stdout=subprocess.DEVNULL)
    os.killpg(proc.pid, signal.SIGKILL)  # the runner, mid-campaign (its worker runs in a session of its own)
    proc.wait()
    before = records.read(out)
    assert 1 <= len(before) < 3
    resumed = stanjax(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(before)} of 3 runs already recorded" in resumed.stdout
    after = records.read(out)
    assert sorted(r.repeat for r in after) == [0, 1, 2]
    assert [r.run_id for r in after[: len(before)]] == [r.run_id for r in before]
    assert {r.campaign_id for r in after} == {before[0].campaign_id}  # one campaign: its blocks still pair
    assert {r.entropy for r in after} == {before[0].entropy}  # seeded as the campaign was


def test_one_writer_at_a_time_and_a_block_cut_by_kill_9_keeps_its_seed(tmp_path):
    """While a campaign runs (block 0's NumPyro run hangs), a second `--resume` into its folder is one line naming
    it, exit 2, nothing appended; one with --wait says so and waits. kill -9 of the campaign lets it go (the kernel
    ends its lock): the waiting one runs the 3 missing runs, and every block's runs share one sampler seed, as an
    uninterrupted campaign's do (after a resume they had not: 794735250 beside 241274827)."""
    out = tmp_path / "results"
    args = ["run", "--suite", "tiny", "--models", EIGHT, "--engines", "stan", "numpyro", "--repeats", "2"]
    args += ["--out", str(out)]
    os.environ["STANJAX_FAULT"] = "numpyro:hang"
    try:
        proc = start_and_wait_for_a_record(args, out, stdout=subprocess.DEVNULL)
    finally:
        del os.environ["STANJAX_FAULT"]
    try:
        [first] = records.read(out)  # block 0's Stan run
        refused = stanjax(*args, "--resume", timeout=300)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert f"{out} is in use by pid {proc.pid} (" in refused.stderr
        assert refused.stderr.endswith("; wait for it, or add --wait\n")
        assert len(records.read(out)) == 1
        waiting = subprocess.Popen(
            [sys.executable, "-m", "stanjax.runner.commands.cli", *args, "--resume", "--wait"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said = waiting.stdout.readline()  # its first line: nothing is read from OUT before the lock
        assert said.startswith(f"{out} is in use by pid {proc.pid} (") and said.endswith("waiting for it to finish\n")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    stdout, stderr = waiting.communicate(timeout=600)
    assert waiting.returncode == 0, stderr
    assert "resume: 1 of 4 runs already recorded, 3 to run" in stdout and "waiting" not in stdout
    after = records.read(out)
    assert sorted((r.block, r.engine) for r in after) == [(0, "numpyro"), (0, "stan"), (1, "numpyro"), (1, "stan")]
    assert {r.campaign_id for r in after} == {first.campaign_id} and all(r.status == "ok" for r in after)
    seeds = [{r.sampler_seed for r in after if r.block == block} for block in (0, 1)]
    assert [len(s) for s in seeds] == [1, 1] and seeds[0] != seeds[1] and seeds[0] == {first.sampler_seed}


@pytest.mark.parametrize("how", ["kill -9 of the campaign's group", "SIGTERM to the campaign"])
def test_a_worker_never_outlives_its_campaign(tmp_path, how):
    """The worker of a run that would never end (a planted hang) is gone moments after its campaign is, with its
    job folder: an orphan would run beside the next campaign and skew its timings."""
    out = tmp_path / "results"
    tag = f"orphan-{os.getpid()}-{time.monotonic_ns()}"
    args = ["run", "--suite", "tiny", "--models", EIGHT, "--engines", "stan", "numpyro", "--out", str(out)]
    os.environ["STANJAX_FAULT"] = "numpyro:hang"
    try:
        proc = start_and_wait_for_a_record(args, out, stdout=subprocess.DEVNULL, tag=tag, tmp=tmp_path / "tmp")
    finally:
        del os.environ["STANJAX_FAULT"]
    time.sleep(1)  # the numpyro worker has started and hangs
    assert any(b"stanjax.runner.measure.worker" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in tagged(tag))
    if how.startswith("kill"):
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert gone(tag), [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in tagged(tag)]
    assert stanjax_folders(tmp_path / "tmp") == []  # its job folder (and Stan's socket folder) removed too
    assert [r.engine for r in records.read(out)] == ["stan"]


def test_a_hanging_run_is_timed_out_and_recorded(tmp_path):
    out = tmp_path / "results"
    proc = stanjax(
        "run",
        "--suite",
        "tiny",
        "--models",
        EIGHT,
        "--out",
        str(out),
        "--timeout",
        "15",
        env={"STANJAX_FAULT": "numpyro:hang"},
        timeout=600,
    )
    assert proc.returncode == 1
    by_engine = {r.engine: r for r in records.read(out)}
    assert by_engine["numpyro"].status == "timeout"
    assert by_engine["numpyro"].error == "timed out after 15 s (progress: building the numpyro model)"  # how far
    assert by_engine["numpyro"].failed_gates == ["completed"]
    assert by_engine["numpyro"].sizes == {} and by_engine["numpyro"].sampler_seed  # known before it ran
    assert by_engine["stan"].status == "ok"


def test_a_crashing_engine_leaves_the_other_engines_records_intact(tmp_path):
    out = tmp_path / "results"
    proc = stanjax(
        "run",
        "--suite",
        "tiny",
        "--models",
        EIGHT,
        "--out",
        str(out),
        env={"STANJAX_FAULT": "numpyro:crash"},
        timeout=600,
    )
    assert proc.returncode == 1 and "1 of 2 runs ok" in proc.stdout
    # a log, not a terminal: a line per run as it ends (issue 83), no progress bar's last frame
    lines = [line for line in proc.stdout.splitlines() if line.startswith("run ")]
    assert [line.split(": ")[0] for line in lines] == ["run 1 of 2", "run 2 of 2"], proc.stdout
    assert sorted(line.rsplit(": ", 1)[1].split(",")[0] for line in lines) == ["error", "ok"]
    assert "━" not in proc.stdout
    by_engine = {r.engine: r for r in records.read(out)}
    assert by_engine["numpyro"].status == "error"
    assert "planted crash in the numpyro worker" in by_engine["numpyro"].error
    assert by_engine["stan"].status == "ok" and by_engine["stan"].metrics.min_ess_bulk > 0


def test_ctrl_c_stops_cleanly_and_keeps_finished_records(tmp_path):
    out = tmp_path / "results"
    # 20 repeats: a warm eight-schools run takes ~1 s, so 3 could all finish before the signal lands
    args = three_repeats(out)
    args[args.index("--repeats") + 1] = "20"
    tag = f"ctrl-c-{os.getpid()}-{time.monotonic_ns()}"
    proc = start_and_wait_for_a_record(args, out, stdout=subprocess.PIPE, tag=tag)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends to the foreground group
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130
    finished = len(records.read(out))
    assert f"interrupted (SIGINT): {finished} of 20 runs finished and recorded" in stdout
    time.sleep(1)
    assert tagged(tag) == []  # no worker (nor anything it started) left


def test_sigterm_stops_the_campaign_like_ctrl_c(tmp_path):
    out = tmp_path / "results"
    args = three_repeats(out)
    args[args.index("--repeats") + 1] = "20"
    tag = f"sigterm-{os.getpid()}-{time.monotonic_ns()}"
    proc = start_and_wait_for_a_record(args, out, stdout=subprocess.PIPE, tag=tag, tmp=tmp_path / "tmp")
    proc.send_signal(signal.SIGTERM)  # to the campaign alone, as a scheduler or `kill` would
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 143
    finished = len(records.read(out))
    assert (
        stdout.strip().splitlines()[-1]
        == f"interrupted (SIGTERM): {finished} of 20 runs finished and recorded in {out}"
    )
    assert gone(tag) and stanjax_folders(tmp_path / "tmp") == []


def test_a_worker_killed_by_a_signal_is_recorded_with_the_signal(tmp_path):
    out = tmp_path / "results"
    tag = f"worker-kill-{os.getpid()}-{time.monotonic_ns()}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stanjax.runner.commands.cli",
            "run",
            "--suite",
            "tiny",
            "--models",
            EIGHT,
            "--engines",
            "numpyro",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "STANJAX_TEST_TAG": tag, "STANJAX_FAULT": "numpyro:hang"},
    )
    deadline = time.monotonic() + 120
    workers = []
    while not workers and time.monotonic() < deadline:
        time.sleep(0.2)
        workers = [
            pid for pid in tagged(tag) if b"stanjax.runner.measure.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
    os.kill(workers[0], signal.SIGKILL)
    assert proc.wait(timeout=120) == 1
    [record] = records.read(out)
    assert record.status == "error" and record.error.startswith("worker killed by SIGKILL")
    assert record.failed_gates == ["completed"] and record.load is not None


def test_a_full_disk_is_one_line_and_keeps_every_record_written(tmp_path, monkeypatch, capsys):
    """The disk fills while the second record is appended (half of its line written): one line, exit 2, the
    first record intact and no half record after it; once there is space, --resume goes on with the campaign and
    writes the rest, with nothing for a reader to warn about."""
    from stanjax.runner.commands.cli import main
    from stanjax.runner.measure import jobs

    real_append, real_write, calls = records.append, os.write, []

    def half_then_full(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def append(path, record):
        calls.append(record)
        with monkeypatch.context() as planted:
            if len(calls) == 2:
                planted.setattr(records.os, "write", half_then_full)
            real_append(path, record)

    out = tmp_path / "results"
    monkeypatch.setattr(jobs.records, "append", append)
    assert main(three_repeats(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device; 1 run(s) of this campaign recorded before" in err
    results = out / records.RESULTS_FILE
    assert results.read_bytes().count(b"\n") == 1 and results.read_bytes().endswith(b"\n")
    monkeypatch.setattr(jobs.records, "append", real_append)  # space freed
    assert main([*three_repeats(out), "--resume"]) == 0
    assert "resume: 1 of 3 runs already recorded" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn or unreadable line
        written = records.read(out)
    assert sorted(r.repeat for r in written) == [0, 1, 2] and len({r.campaign_id for r in written}) == 1


def test_a_stop_signal_waits_until_a_record_is_both_on_disk_and_counted():
    """Ctrl-C landing between a record's append and its count said "0 of 20 runs finished and recorded" beside a
    record on disk (seen in make test): within ``stop_signals_held`` the signal waits, then stops the campaign."""
    from stanjax.runner.measure.stopping import stop_signals_held

    done = []
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), stop_signals_held():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("on disk")
            done.append("counted")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert done == ["on disk", "counted"]
