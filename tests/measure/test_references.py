"""Reference generation: batches of chains until the target MCSE, never a reference short of it. Run as the CLI in
its own process, as users run it: the bundled Stan forks its chains, which a process that loaded JAX must not."""

import json
import re
import subprocess
import sys

import pytest

from stanjax.models import ROOT
from stanjax.runner.commands.cli import main
from stanjax.runner.core.config import blas_threads
from stanjax.runner.measure import references

pytestmark = pytest.mark.stan  # reference generation with the Stan engine

MODEL_ID = "eight_schools-eight_schools_noncentered"


def reference(tmp_path, *options):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "stanjax.runner.commands.cli",
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


CENTRED, TWIN = "irt_sparse_synth-irt_2pl_centred", "irt_sparse_synth-irt_2pl_noncentred"


def test_a_centred_model_is_gated_against_its_twins_reference_narrowed_to_its_parameters(monkeypatch):
    """The twin's summaries of the centred model's names (its transformed parameters beta, gamma and the shared
    ones), never its own beta_raw, gamma_raw; data of another hash get none."""
    from stanjax import models

    spec = models.get(CENTRED)
    data = spec.data("tiny", seed=1)
    shapes = {p.name: p.resolve_shape(data) for p in models.get(TWIN).judged}
    twin_names = references.element_names(shapes)
    summary = {"mean": 0.0, "sd": 1.0, "mcse_mean": 0.01, "mcse_sd": 0.01}
    twin = {"header": {"data_hash": models.data_hash(data), "command": "stanjax reference ...", "size": "tiny"}}
    twin["parameters"] = {name: summary for name in twin_names}
    monkeypatch.setattr(references, "load", lambda model_id, size: twin if model_id == TWIN else None)
    reference, why = references.applicable(CENTRED, "tiny", (), models.data_hash(data))
    expected = references.element_names({p.name: p.resolve_shape(data) for p in spec.judged})
    assert sorted(reference["parameters"]) == sorted(expected) and "twin" in why
    assert not any("_raw" in name for name in reference["parameters"]) and reference["header"]["twin_of"] == CENTRED
    assert references.applicable(CENTRED, "tiny", (), "another hash")[0] is None
    twin["parameters"] = {k: v for k, v in twin["parameters"].items() if not k.startswith("log_gamma[")}  # broken
    with pytest.raises(ValueError, match="no log_gamma"):
        references.applicable(CENTRED, "tiny", (), models.data_hash(data))


def test_a_model_whose_reference_is_its_twins_is_refused_with_the_twins_command(tmp_path, capsys):
    assert main(["reference", CENTRED, "--size", "tiny", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"stanjax reference {TWIN} --size tiny" in err and not list(tmp_path.iterdir())


def test_an_sd_with_an_infinite_fourth_moment_is_left_out_of_the_references_target(monkeypatch):
    """A Student-t(2.5) parameter (k = 0.4: its sd's MCSE does not shrink as 1 / sqrt(ESS)) beside normal ones: the
    reference stops at its first batch, its mean held to the target and its sd named in the header; a planted
    limit of 1 (every sd in the target) makes the same draws fall short of the target (no reference)."""
    from types import SimpleNamespace

    import numpy as np

    from stanjax import models
    from stanjax.runner.core.config import RunConfig
    from stanjax.runner.core.engine_registry import SamplerStats
    from stanjax.runner.measure import validity

    spec = models.get(MODEL_ID)
    config = RunConfig(size="tiny", chains=8, warmup=10, draws=2500)
    rng = np.random.default_rng(0)

    class Engine:
        def compile(self, spec, placement):
            return None

        def sample(self, handle, data, config, seed, placement):
            draws = {p.name: rng.normal(size=(8, 2500, *p.resolve_shape(data))) for p in spec.judged}
            draws["tau"] = np.abs(rng.standard_t(2.5, size=(8, 2500)))
            stats = SamplerStats(n_leapfrog=np.ones((8, 2500)), divergent=np.zeros((8, 2500), bool))
            return SimpleNamespace(draws=draws, stats=stats, info={})

    monkeypatch.setattr(references, "get_engine", lambda name: Engine())
    reference = references.generate(spec, config, "test", target_mcse=0.02, max_batches=1, progress=lambda _: None)
    assert list(reference["header"]["sd_not_in_target"]["parameters"]) == ["tau"]
    assert reference["parameters"]["tau"]["mcse_mean"] / reference["parameters"]["tau"]["sd"] <= 0.02
    monkeypatch.setattr(validity, "KHAT_SD_MAX", 1.0)
    with pytest.raises(references.NotConverged):
        references.generate(spec, config, "test", target_mcse=0.02, max_batches=1, progress=lambda _: None)
