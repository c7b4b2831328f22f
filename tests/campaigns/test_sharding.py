"""Row-sharded log densities equal the single-device ones and NUTS runs sharded: on 8 simulated CPU devices in one
process, and as 2 JAX processes x 4 devices (jax.distributed, gloo), the code path of several hosts."""

import json
import os
import subprocess
import sys

import pytest

from stanjax.models import ROOT

pytestmark = pytest.mark.slow  # NUTS and gradients on 8 simulated devices, in a subprocess (~30-50 s)


ONE_PROCESS_DRAWS = 20  # the NUTS run's iterations: enough to show it runs on sharded data (100 + 100: ~10 s more)


@pytest.fixture(scope="module")
def self_check():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stanjax.runner.campaigns.sharding",
            "--warmup",
            "20",
            "--draws",
            str(ONE_PROCESS_DRAWS),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_sharded_log_density_and_gradient_equal_single_device(self_check):
    assert {c["model_id"] for c in self_check["comparisons"]} == {
        "covtype_synth-logistic_regression",
        "movielens_synth-matrix_factorization",
    }
    for comparison in self_check["comparisons"]:
        assert comparison["devices"] == 8
        assert comparison["partitioned"]  # XLA split the rows: the compiled program sums across devices
        assert comparison["max_relative_value_error"] <= 1e-12
        assert comparison["max_relative_gradient_error"] <= 1e-12


def test_short_nuts_run_works_on_sharded_data(self_check):
    (nuts,) = self_check["nuts"]
    assert nuts["partitioned"] and nuts["finite"] and nuts["draws"] == ONE_PROCESS_DRAWS


# The NUTS run of the two-process self-check: every leapfrog step all-reduces across the processes through gloo
# (localhost TCP), so the default 100 + 100 iterations took ~20 s of each process, 20 + 20 about 2 s.
TWO_PROCESS_NUTS = 20


@pytest.fixture(scope="module")
def two_processes():
    """The self-check as 2 JAX processes x 4 CPU devices (jax.distributed, gloo collectives), as on two hosts."""
    from stanjax.runner.campaigns.sharding import launch

    iterations = ["--warmup", str(TWO_PROCESS_NUTS), "--draws", str(TWO_PROCESS_NUTS)]
    return launch("stanjax.runner.campaigns.sharding", iterations, processes=2, devices_per_process=4)


@pytest.mark.slow
def test_two_processes_give_the_single_process_log_density_and_gradient(two_processes):
    for report in two_processes:
        for comparison in report["comparisons"]:
            assert (comparison["devices"], comparison["processes"]) == (8, 2) and comparison["partitioned"]
            assert comparison["max_relative_value_error"] <= 1e-12
            assert comparison["max_relative_gradient_error"] <= 1e-12
        (nuts,) = report["nuts"]
        assert nuts["partitioned"] and nuts["finite"] and nuts["draws"] == TWO_PROCESS_NUTS


@pytest.mark.slow
def test_devices_study_runs_as_several_processes(tmp_path):
    from stanjax.runner.commands.cli import main
    from stanjax.runner.core import records

    assert (
        main(
            [
                "study",
                "devices",
                "--scale",
                "tiny",
                "--simulate-devices",
                "4",
                "--processes",
                "2",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    rows = records.read_measurements(tmp_path)
    assert sorted({(m["devices"], m["processes"]) for m in rows}) == [(2, 2), (4, 2)]
