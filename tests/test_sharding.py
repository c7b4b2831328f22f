"""Row-sharded log densities on 8 simulated CPU devices equal the single-device ones; NUTS runs sharded."""

import json
import os
import subprocess
import sys

import pytest

from models import ROOT


@pytest.fixture(scope="module")
def self_check():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-m", "runner.sharding"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_sharded_log_density_and_gradient_equal_single_device(self_check):
    assert {c["model_id"] for c in self_check["comparisons"]} == {
        "covtype_synth-logistic_regression", "movielens_synth-matrix_factorization"}
    for comparison in self_check["comparisons"]:
        assert comparison["devices"] == 8
        assert comparison["partitioned"]  # XLA split the rows: the compiled program sums across devices
        assert comparison["max_relative_value_error"] <= 1e-12
        assert comparison["max_relative_gradient_error"] <= 1e-12


def test_short_nuts_run_works_on_sharded_data(self_check):
    (nuts,) = self_check["nuts"]
    assert nuts["partitioned"] and nuts["finite"] and nuts["draws"] == 100
