"""Reference generation: batches of chains until the target MCSE, never a reference short of it."""

import re

import pytest

import models
from runner import references
from runner.cli import main
from runner.config import RunConfig

MODEL_ID = "eight_schools-eight_schools_noncentered"


def test_batches_are_added_until_every_mcse_reaches_the_target():
    """Each batch's progress line states R-hat and the worst MCSE; every batch before the last missed the stopping
    rule and the last met it; the header lists one distinct seed per batch."""
    lines = []
    config = RunConfig(size="tiny", chains=2, warmup=300, draws=300)
    ref = references.generate(models.get(MODEL_ID), config, "stanjax reference (test)", "stan", target_mcse=0.05,
                              max_batches=8, progress=lines.append)
    header = ref["header"]
    assert len(lines) == len(header["sampler_seeds"]) == len(set(header["sampler_seeds"])) >= 1
    progress = [tuple(map(float, re.search(r"R-hat ([\d.]+), max MCSE ([\d.]+)", line).groups())) for line in lines]
    assert all(rhat > references.RHAT_MAX or mcse > 0.05 for rhat, mcse in progress[:-1])
    assert header["max_mcse"] <= 0.05 and header["max_rhat"] <= references.RHAT_MAX
    assert all(row["mcse_mean"] <= 0.05 * row["sd"] and row["mcse_sd"] <= 0.05 * row["sd"]
               for row in ref["parameters"].values())
    assert {"q5", "q50", "q95", "mcse_q5"} <= set(ref["parameters"]["mu"])
    assert f"{len(lines)} batch(es) of 2 stan chains" in header["how"]


def test_a_reference_short_of_its_target_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="no reference"):
        references.generate(models.get(MODEL_ID), RunConfig(size="tiny", chains=2, warmup=100, draws=100),
                            "stanjax reference (test)", target_mcse=0.001, max_batches=1, progress=lambda _: None)


@pytest.mark.parametrize("argv", [["--target-mcse", "2"], ["--max-batches", "0"]])
def test_bad_reference_options_exit_2_before_sampling(tmp_path, capsys, argv):
    assert main(["reference", MODEL_ID, "--size", "tiny", "--out", str(tmp_path), *argv]) == 2
    assert "reference:" not in capsys.readouterr().out and not list(tmp_path.iterdir())
