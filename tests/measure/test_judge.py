"""Judging a run's draws in the campaign's process: the worker only samples, and a failure to judge is the run's."""

import os
import subprocess
import threading

import pytest

from stanjax.models import ROOT
from stanjax.runner.core.config import Job, RunConfig
from stanjax.runner.measure import jobs, judge
from stanjax.runner.measure.jobs import WORKER_PYTHON

EIGHT_SCHOOLS = "eight_schools-eight_schools_noncentered"


def test_the_worker_imports_neither_arviz_nor_an_ode_solver():
    """arviz-stats' import (~3 s) once per campaign, not once per run: the worker's own imports leave it out; and
    listing the models imports no model's heavy library (Lotka-Volterra's scipy.integrate took 0.3 s a run)."""
    code = (
        "import sys, stanjax.runner.measure.worker; from stanjax import models; models.registry(); "
        "print(sorted(m for m in sys.modules if m.startswith(('arviz', 'scipy.integrate'))))"
    )
    done = subprocess.run([WORKER_PYTHON, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_a_lane_is_judged_on_its_own_cores_and_other_threads_keep_theirs():
    every = os.sched_getaffinity(0)
    last = max(every)
    seen, inside = {}, threading.Event()

    def another_lane():  # started before, reading its own mask while this thread is inside
        inside.wait(10)
        seen["other thread"] = os.sched_getaffinity(0)

    other = threading.Thread(target=another_lane)
    other.start()
    with judge.on_cores([last]):
        seen["inside"] = os.sched_getaffinity(0)
        inside.set()
        other.join()
    assert seen == {"inside": {last}, "other thread": every}
    assert os.sched_getaffinity(0) == every


@pytest.mark.stan
def test_a_run_is_judged_after_its_worker_and_a_failed_judging_is_the_runs_error(tmp_path, monkeypatch):
    job = Job(EIGHT_SCHOOLS, "stan", RunConfig(size="tiny", chains=2, draws=200, warmup=200, seed=1))
    judged = jobs.run_one(job, 300, tmp_path)
    assert judged["status"] == "ok" and judged["metrics"]["min_ess_bulk"] > 0
    assert judged["gates"]["reference"]["checked"] and "warmup_gradients" not in judged
    assert judged["metrics"]["gradients_warmup"] is None or judged["metrics"]["gradients_warmup"] >= 0

    def planted(*args):
        raise ValueError("planted judging fault")

    monkeypatch.setattr(judge, "judge", planted)
    failed = jobs.run_one(job, 300, tmp_path)
    assert failed["status"] == "error" and not failed["valid"]
    assert "judging the draws failed" in failed["error"] and "planted judging fault" in failed["error"]
