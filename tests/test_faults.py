"""Faults never lose a result: kill -9 then --resume, a hanging run, a crashing engine."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from models import ROOT
from runner import records

pytestmark = pytest.mark.slow
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


def start_and_wait_for_a_record(args, out, stdout, tag: str = ""):
    """Start a campaign in its own process group (tagged with ``tag`` in its environment, which its workers
    inherit); return once its first record is on disk."""
    # KeyboardInterrupt on SIGINT in the child: a shell's background job (`make test &`) ignores SIGINT, and Python
    # installs its handler only when SIGINT is not ignored at start-up. Set in the child's own code, not with
    # preexec_fn: that would fork this (JAX-loaded) test process instead of spawning.
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "sys.argv = ['stanjax', *sys.argv[1:]]; runpy.run_module('runner.cli', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", start, *args], cwd=ROOT, start_new_session=True,
                            stdout=stdout, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "STANJAX_TEST_TAG": tag})
    results = out / records.RESULTS_FILE
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 1):
        time.sleep(0.2)
    return proc


def stanjax(*args, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, **kwargs)


def test_kill_9_mid_campaign_then_resume_loses_nothing_and_duplicates_nothing(tmp_path):
    out = tmp_path / "results"
    args = three_repeats(out)
    proc = start_and_wait_for_a_record(args, out, stdout=subprocess.DEVNULL)
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its worker, mid-campaign
    proc.wait()
    before = records.read(out)
    assert 1 <= len(before) < 3
    resumed = stanjax(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(before)} of 3 runs already recorded" in resumed.stdout
    after = records.read(out)
    assert sorted(r.repeat for r in after) == [0, 1, 2]
    assert [r.run_id for r in after[:len(before)]] == [r.run_id for r in before]


def test_a_hanging_run_is_timed_out_and_recorded(tmp_path):
    out = tmp_path / "results"
    proc = stanjax("run", "--suite", "tiny", "--models", EIGHT, "--out", str(out), "--timeout", "30",
                   env={"STANJAX_FAULT": "numpyro:hang"}, timeout=600)
    assert proc.returncode == 1
    by_engine = {r.engine: r for r in records.read(out)}
    assert by_engine["numpyro"].status == "timeout" and "timed out after 30 s" in by_engine["numpyro"].error
    assert by_engine["numpyro"].failed_gates == ["completed"]
    assert by_engine["numpyro"].sizes == {} and by_engine["numpyro"].sampler_seed  # known before it ran
    assert by_engine["stan"].status == "ok"


def test_a_crashing_engine_leaves_the_other_engines_records_intact(tmp_path):
    out = tmp_path / "results"
    proc = stanjax("run", "--suite", "tiny", "--models", EIGHT, "--out", str(out),
                   env={"STANJAX_FAULT": "numpyro:crash"}, timeout=600)
    assert proc.returncode == 1 and "1 of 2 runs ok" in proc.stdout
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
    assert f"interrupted: {finished} of 20 runs finished and recorded" in stdout
    time.sleep(1)
    assert tagged(tag) == []  # no worker (nor anything it started) left
