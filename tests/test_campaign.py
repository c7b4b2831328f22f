"""The campaign's view of the machine: a run measured beside other work is flagged, never passed silently."""

import subprocess
import time

import pytest

from runner.campaign import LOADED_CORES, load_sample, machine_load


def test_load_is_the_other_processes_busy_cores_and_flags_a_loaded_machine():
    quiet = machine_load({"busy_s": 100.0, "ours_s": 10.0, "load_average": 0.1},
                         {"busy_s": 110.2, "ours_s": 20.0, "load_average": 1.0}, wall_s=10.0)
    assert quiet["other_processes_cores"] == pytest.approx(0.02) and not quiet["loaded"]
    busy = machine_load({"busy_s": 100.0, "ours_s": 10.0, "load_average": 0.1},
                        {"busy_s": 125.0, "ours_s": 20.0, "load_average": 2.0}, wall_s=10.0)
    assert busy["other_processes_cores"] == pytest.approx(1.5) and busy["loaded"] and busy["load_average_end"] == 2.0
    unknown = machine_load({"busy_s": None, "ours_s": 0.0, "load_average": 0.0},
                           {"busy_s": None, "ours_s": 1.0, "load_average": 0.0}, wall_s=1.0)
    assert unknown["other_processes_cores"] is None and not unknown["loaded"]  # missing, never zero


def test_a_busy_process_that_is_not_ours_is_seen():
    before = load_sample()
    # A busy loop detached from this process (its parent shell exits at once): its CPU time is not ours.
    subprocess.run(["sh", "-c", "timeout 1.5 sh -c 'while :; do :; done' >/dev/null 2>&1 &"], check=True)
    time.sleep(1.6)
    load = machine_load(before, load_sample(), wall_s=1.6)
    assert load["other_processes_cores"] > LOADED_CORES and load["loaded"]
