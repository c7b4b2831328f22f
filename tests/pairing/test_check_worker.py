"""`stanjax check` runs its static and density stages in a worker process of their own (issue 80's item 3). A stage
that never returns is stopped after --timeout, in one line; Ctrl-C and SIGTERM stop the check there with 130 / 143;
kill -9 of the check leaves nothing running. The payload is tests/fixtures/endless, a port whose log density never
returns in the posterior's region: an endless jax.lax.while_loop in XLA, where Python runs no signal handler (the
probe's check ran on past 197 s, deaf to Ctrl-C). Every test waits for a stage (``slow``); those that reach the
density stage build the fixture's Stan program (``stan``: one compile, then httpstan's cache)."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stanjax.models import ROOT
from tests.measure.test_faults import gone, stanjax_folders, tagged

pytestmark = pytest.mark.slow
ENDLESS = ROOT / "tests" / "fixtures" / "endless"
# KeyboardInterrupt on SIGINT in the check even where pytest runs as a background job (tests/measure/test_faults.py)
START = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv = ['stanjax', *sys.argv[1:]]; runpy.run_module('stanjax.runner.commands.cli', run_name='__main__')"
)


@pytest.fixture
def endless(tmp_path):
    """The fixture's three files, copied: (Stan program, NumPyro file, data file)."""
    files = tuple(tmp_path / name for name in ("endless.stan", "endless.py", "endless.json"))
    for copy in files:
        shutil.copyfile(ENDLESS / copy.name, copy)
    return files


def plant(py: Path, line: str) -> None:
    """``line`` in place of the port's bound on mu (the line that sets where its loop is endless)."""
    py.write_text(py.read_text().replace("ENDLESS_ABOVE = 5.0\n", f"{line}\n"))


@pytest.fixture
def tag():
    """The tag of the processes a test starts; whatever of them a failing test leaves running is killed after it."""
    name = f"check-{os.getpid()}-{time.monotonic_ns()}"
    yield name
    for pid in tagged(name):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def start_check(files, tmp_path: Path, tag: str, *options: str) -> subprocess.Popen:
    """`stanjax check` of ``files`` up to its density stage, in a process group of its own, tagged with ``tag``
    (its workers inherit it), its temporary folders in tmp_path/tmp; the port touches tmp_path/looping as it starts
    its endless loop."""
    stan, py, data = files
    (tmp_path / "tmp").mkdir(exist_ok=True)
    args = ["check", str(stan), str(py), "--data", str(data), "--out", str(tmp_path / "out"), "--stop-after", "density"]
    return subprocess.Popen(
        [sys.executable, "-c", START, *args, *options],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "STANJAX_TEST_TAG": tag,
            "TMPDIR": str(tmp_path / "tmp"),
            "STANJAX_TEST_LOOPING": str(tmp_path / "looping"),
        },
    )


def in_the_loop(proc: subprocess.Popen, tmp_path: Path) -> None:
    """Return once the check's density stage is in the port's endless loop (a first compile included)."""
    deadline = time.monotonic() + 400
    while not (tmp_path / "looping").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the density stage never reached the loop"
        time.sleep(0.2)
    time.sleep(1)  # from the touch into XLA's loop


def commands(tag: str) -> list[bytes]:
    return [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in tagged(tag)]


@pytest.mark.stan
def test_the_fixtures_port_with_its_loop_never_entered_passes_the_density_check(endless, tmp_path, tag):
    """The control: what stops the checks below is the loop, nothing else in the pair (and the program is built)."""
    plant(endless[1], "ENDLESS_ABOVE = 1e9")
    proc = start_check(endless, tmp_path, tag)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out + err
    assert any(line.lstrip().startswith("density") and " ok " in line for line in out.splitlines()), out
    assert not (tmp_path / "looping").exists()


def ends_within(proc: subprocess.Popen, seconds: float) -> tuple[str, str, float]:
    """Its output and how long it took to end; a check that runs on fails here (not in a hung CI)."""
    began = time.monotonic()
    out, err = proc.communicate(timeout=seconds + 120)
    return out, err, time.monotonic() - began


def test_a_model_that_never_returns_stops_the_static_stage_after_timeout(endless, tmp_path, tag):
    """An endless loop run as the port is imported (laying the pair out imports it): the static stage never returns;
    the check ends after --timeout, one line, exit 2, nothing left running. No Stan compile. (The model's own loop
    would not do: the static stage's one run of it, under JAX's index checks, has no use for its result, and XLA
    drops it.)"""
    plant(endless[1], "ENDLESS_ABOVE = jax.lax.while_loop(lambda bound: bound > -1.0, lambda bound: bound + 1.0, 0.0)")
    out, err, took = ends_within(start_check(endless, tmp_path, tag, "--timeout", "20"), 20)
    assert err.count("\n") == 1 and err.startswith(
        "stanjax check: error: the static stage stopped after 20 s (--timeout): reading the Stan program, importing "
        "the NumPyro file and tracing its model on the data did not finish: a model that never returns"
    ), err
    assert out == "" and took < 20 + 30  # the limit, and the interpreters' start
    assert gone(tag, 5), commands(tag)
    assert stanjax_folders(tmp_path / "tmp") == []


@pytest.mark.stan
def test_a_log_density_that_never_returns_stops_the_density_stage_after_timeout(endless, tmp_path, tag):
    out, err, took = ends_within(start_check(endless, tmp_path, tag, "--timeout", "30"), 60)
    assert err.count("\n") == 1 and err.startswith(
        "stanjax check: error: the density stage stopped after 30 s (--timeout): building the Stan program (a first "
        "compile takes minutes), its short run and both log densities at its draws did not finish: a log density "
        "that never returns, or raise --timeout for a large model"
    ), err
    assert " static   ok " in out and "density" not in out
    assert took < 2 * 30 + 30  # each stage's limit, and the interpreters' start
    assert gone(tag, 5), commands(tag)
    assert stanjax_folders(tmp_path / "tmp") == []


@pytest.mark.stan
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_ctrl_c_and_sigterm_stop_the_check_in_its_density_stage(signum, endless, tmp_path, tag):
    """The check itself gets the signal (its worker runs in a session of its own, as a terminal's Ctrl-C leaves it):
    the worker's group is killed, one line, exit 128 + the signal."""
    proc = start_check(endless, tmp_path, tag)
    in_the_loop(proc, tmp_path)
    assert any(b"stanjax.runner.pairing.stage_worker\0density" in command for command in commands(tag))
    proc.send_signal(signum)
    out, err, took = ends_within(proc, 10)
    assert proc.returncode == 128 + signum, out + err
    name = signal.Signals(signum).name
    assert out.splitlines()[-1] == f"interrupted ({name}) before the runs: nothing recorded" and took < 10, out
    assert gone(tag, 5), commands(tag)
    assert stanjax_folders(tmp_path / "tmp") == []


@pytest.mark.stan
def test_kill_9_of_the_check_in_its_density_stage_leaves_nothing_running(endless, tmp_path, tag):
    """The worker's main thread is in XLA's loop, where its SIGTERM handler never runs: its thread on the check's
    pidfd kills its group (httpstan's forked pool too) and removes its folder."""
    proc = start_check(endless, tmp_path, tag)
    in_the_loop(proc, tmp_path)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert gone(tag, 5), commands(tag)
    assert stanjax_folders(tmp_path / "tmp") == []
