"""Reference generation: batches of chains until the target MCSE, never a reference short of it. Run as the CLI in
its own process, as users run it: the bundled Stan forks its chains, which a process that loaded JAX must not."""

import json
import re
import subprocess
import sys

import pytest

from stanjax.models import ROOT
from stanjax.runner import references
from stanjax.runner.cli import main
from stanjax.runner.config import blas_threads

pytestmark = pytest.mark.stan  # reference generation with the Stan engine

MODEL_ID = "eight_schools-eight_schools_noncentered"


def reference(tmp_path, *options):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "stanjax.runner.cli",
            "reference",
            MODEL_ID,
            "--size",
            "tiny",
            "--out",
            str(tmp_path),
            *options,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_batches_are_added_until_every_mcse_reaches_the_target(tmp_path):
    """Each batch's progress line states R-hat and the worst MCSE; every batch before the last missed the stopping
    rule and the last met it; the header lists one distinct seed per batch."""
    done = reference(tmp_path, "--chains", "2", "--warmup", "300", "--draws", "300", "--target-mcse", "0.05")
    assert done.returncode == 0, done.stderr[-2000:]
    ref = json.loads(references.path(MODEL_ID, "tiny", tmp_path).read_text())
    header = ref["header"]
    progress = [
        tuple(map(float, match.groups())) for match in re.finditer(r"R-hat ([\d.]+), max MCSE ([\d.]+)", done.stdout)
    ]
    assert len(progress) == len(header["sampler_seeds"]) == len(set(header["sampler_seeds"])) >= 1
    assert all(rhat > references.RHAT_MAX or mcse > 0.05 for rhat, mcse in progress[:-1])
    assert header["max_mcse"] <= 0.05 and header["max_rhat"] <= references.RHAT_MAX
    assert all(
        row["mcse_mean"] <= 0.05 * row["sd"] and row["mcse_sd"] <= 0.05 * row["sd"]
        for row in ref["parameters"].values()
    )
    assert {"q5", "q50", "q95", "mcse_q5"} <= set(ref["parameters"]["mu"])
    assert f"{len(progress)} batch(es) of 2 stan chains" in header["how"]
    assert "--target-mcse 0.05" in header["command"]


def test_a_reference_short_of_its_target_is_refused(tmp_path):
    done = reference(
        tmp_path, "--chains", "2", "--warmup", "100", "--draws", "100", "--target-mcse", "0.001", "--max-batches", "1"
    )
    assert done.returncode == 1 and "no reference" in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [["--target-mcse", "2"], ["--max-batches", "0"]])
def test_bad_reference_options_exit_2_before_sampling(tmp_path, capsys, argv):
    assert main(["reference", MODEL_ID, "--size", "tiny", "--out", str(tmp_path), *argv]) == 2
    assert "reference:" not in capsys.readouterr().out and not list(tmp_path.iterdir())


def test_a_numpyro_reference_gives_openblas_one_share_of_the_cores_per_parallel_chain(tmp_path, monkeypatch):
    """As a campaign's worker: OpenBLAS's default threads stalled the parallel chains' Cholesky calls (the GP's
    default reference ran for hours), so the command sets OPENBLAS_NUM_THREADS and the header says so."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    done = reference(
        tmp_path, "--engine", "numpyro", "--chains", "2", "--warmup", "200", "--draws", "200", "--target-mcse", "0.2"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    header = json.loads(references.path(MODEL_ID, "tiny", tmp_path).read_text())["header"]
    assert header["engine"]["blas_threads"] == str(blas_threads(0, 2, "parallel"))
