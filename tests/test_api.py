"""The notebook API (``import stanjax as sj``): a posterior, a run with its draws and record, a paired comparison,
the records as a table and the report, through the same planning, workers and gates as the CLI."""

import json

import numpy as np
import pytest

import stanjax as sj
from stanjax.models import ROOT, UnknownChoice, UsageError

EIGHT = "eight_schools-eight_schools_noncentered"
TINY = {"size": "tiny", "chains": 2, "warmup": 150, "draws": 150}


def test_a_posterior_holds_its_data_programs_and_reference():
    p = sj.posterior(EIGHT)
    assert p.id == EIGHT and p.title and "tiny" in p.sizes and "theta_tilde" in p.parameters
    data = p.data("tiny")
    assert set(data) == {"J", "y", "sigma"}
    assert "parameters {" in p.stan_code and p.stan_file.name == "eight_schools_noncentered.stan"
    assert callable(p.numpyro_model) and p.numpyro_model.__name__ == "eight_schools_noncentered"
    assert p.reference("tiny")["header"]["model_id"] == EIGHT


def test_unknown_names_are_one_line_usage_errors_before_anything_runs(tmp_path):
    with pytest.raises(UnknownChoice, match="model"):
        sj.posterior("no_such-posterior")
    with pytest.raises(UsageError, match="engine"):
        sj.sample(EIGHT, engine="pymc", out=tmp_path, **TINY)
    with pytest.raises(UsageError, match="size"):
        sj.sample(EIGHT, engine="numpyro", size="huge", out=tmp_path)
    (tmp_path / "file").write_text("")
    for verb in (sj.sample, sj.compare):  # the run verb's own write check
        with pytest.raises(UsageError, match="cannot write results"):
            verb(EIGHT, out=tmp_path / "file" / "results", **TINY)
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.slow
def test_a_sample_gives_draws_as_arviz_and_its_record_lands_in_out(tmp_path):
    run = sj.sample(sj.posterior(EIGHT), engine="numpyro", out=tmp_path, **TINY)
    assert run.draws["theta_tilde"].shape == (2, 150, 8) and run.sample_stats["diverging"].shape == (2, 150)
    tree = run.to_inference_data()
    assert tree["posterior"]["tau"].shape == (2, 150)
    # the draws are the run's: their mean is the record's (one summary path for both)
    assert run.record.metrics.posterior_mean["tau"] == pytest.approx(float(np.mean(run.draws["tau"])))
    assert run.ess_per_second == run.record.metrics.ess_per_s > 0
    [line] = (tmp_path / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["run_id"] == run.record.run_id


@pytest.mark.slow
@pytest.mark.stan
def test_compare_runs_paired_blocks_and_says_when_they_are_too_few(tmp_path):
    found = sj.compare(EIGHT, engines=["stan", "numpyro"], blocks=2, out=tmp_path, reruns=0, **TINY)
    assert len(found.records) == 4 and {r.block for r in found.records} == {0, 1}
    assert [r.engine for r in found.records] == ["stan", "numpyro", "numpyro", "stan"]  # order alternates
    assert found.insufficient  # 2 blocks: under 5, no evidence either way
    if found.ratio is not None:  # both runs of a block valid: NumPyro-CPU ÷ Stan-CPU, as the report takes it
        assert (found.numerator, found.denominator) == ("NumPyro-CPU", "Stan-CPU")
        assert found.ratio.low <= found.ratio.value <= found.ratio.high
    table = sj.load(tmp_path)
    assert len(table) == 4 and set(table.engine) == {"stan", "numpyro"}
    index = sj.report(tmp_path, out=tmp_path / "report")
    assert index.name == "index.html" and EIGHT in index.read_text()


def test_check_is_the_verbs_logic_with_a_result_object(tmp_path, own_models):
    example = ROOT / "examples" / "poisson"
    stan, numpyro = example / "stan" / "poisson_regression.stan", example / "jax_models" / "poisson_regression.py"
    found = sj.check(stan, numpyro, data=example / "counts.json", stop_after="static", out=tmp_path)
    assert [stage["name"] for stage in found.stages] == ["static"] and found.stages[0]["ok"]
    assert found.verdict is None and found.exit_code == 0 and found.spec.id == "counts-poisson_regression"
    with pytest.raises(UsageError, match="needs --data"):
        sj.check(stan, numpyro)
