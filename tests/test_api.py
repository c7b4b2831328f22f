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


@pytest.mark.parametrize(
    "verb, arguments, said",
    [
        (sj.sample, {"chains": 0}, "chains must be between 1 and 65536, got 0"),
        (sj.sample, {"warmup": 0}, "warmup must be between 1 and 1000000, got 0"),
        (sj.sample, {"draws": 2}, "draws must be between 4 and 1000000, got 2"),
        (sj.sample, {"chains": 4.5}, "chains must be a whole number, got 4.5"),
        (sj.sample, {"seed": -1}, "seed must be between 0 and 4294967295, got -1"),
        (sj.sample, {"seed": "1"}, "seed must be a whole number, got '1'"),
        (sj.sample, {"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
        (sj.sample, {"timeout": "long"}, "timeout must be a positive number of seconds, got 'long'"),
        (sj.compare, {"blocks": 0}, "blocks must be between 1 and 100, got 0"),
        (sj.compare, {"reruns": 11}, "reruns must be between 0 and 10, got 11"),
        (sj.sample, {"device": "tpu"}, "unknown device 'tpu' (did you mean 'gpu'? choose from: cpu, gpu)"),
        (sj.sample, {"device": "gpu"}, "device='gpu': JAX sees no GPU on this machine"),
        (sj.sample, {"stan": "cmdstn"}, "unknown Stan front end 'cmdstn' (did you mean 'cmdstan'? choose from: "),
        (sj.sample, {"chain_method": "vectorised"}, "unknown chain method 'vectorised' (did you mean 'vectorized'?"),
        (
            sj.sample,
            {"chains": 100},
            "chain_method='parallel' gives each chain its own CPU device: at most 64 chains, got 100 (use "
            "chain_method='vectorized')",
        ),
        (
            sj.sample,
            {"engine": "stan", "chains": 100},
            "chains=100: from 64 chains on the chains start in 16 superchains",
        ),
        (sj.sample, {"engine": "numpyr"}, "unknown engine 'numpyr' (did you mean 'numpyro'? choose from: "),
        (sj.sample, {"size": "tinny"}, "unknown size 'tinny' (did you mean 'tiny'? choose from: "),
        (
            sj.sample,
            {"posterior": "eight_schools-noncentered"},
            "unknown model 'eight_schools-noncentered' (did you mean 'eight_schools-eight_schools_noncentered'?",
        ),
        (
            sj.compare,
            {"engines": ["stan"]},
            "engines must be two engines, the denominator and the numerator, got ['stan']",
        ),
        (sj.compare, {"engines": "stan"}, "engines must be two engines, the denominator and the numerator, got 'stan'"),
        (sj.compare, {"engines": ["stan", "stan"]}, "engines must be two engines"),
        (sj.compare, {"engines": ["stan", "numpyro", "blackjax_nuts"]}, "engines must be two engines"),
    ],
)
def test_a_bad_argument_is_one_line_in_the_apis_words_before_anything_runs(
    verb, arguments, said, tmp_path, monkeypatch
):
    """Every argument of ``sample`` and ``compare`` is checked by the run verb's planning, and the refusal names
    the argument as this API spells it (``chains``, never ``--chains``), with the nearest name for a typo."""
    from stanjax.runner.measure import jobs

    monkeypatch.setattr(jobs, "run_one", lambda *args: pytest.fail("ran despite a bad argument"))
    arguments = {"posterior": EIGHT, **TINY, "out": tmp_path / "results", **arguments}
    with pytest.raises(UsageError) as refused:
        verb(**arguments)
    assert said in str(refused.value) and "\n" not in str(refused.value) and "--" not in str(refused.value)
    assert not (tmp_path / "results").exists()


def test_stan_asked_through_cmdstan_where_there_is_none_is_said_in_the_apis_words(tmp_path, monkeypatch):
    from stanjax.runner.core import engine_registry

    monkeypatch.setattr(engine_registry, "find_cmdstan", lambda: None)
    with pytest.raises(UsageError, match="^stan='cmdstan': no CmdStan installation found"):
        sj.sample(EIGHT, engine="stan", stan="cmdstan", out=tmp_path, **TINY)


@pytest.mark.parametrize("verb", [sj.sample, sj.compare])
def test_a_folder_another_process_writes_into_is_refused_in_the_apis_words(verb, tmp_path, monkeypatch):
    from stanjax.runner.measure import jobs
    from tests.core.test_folder_lock import other

    monkeypatch.setattr(jobs, "run_one", lambda *args: pytest.fail("ran into a folder in use"))
    holder = other(tmp_path, 600)
    try:
        with pytest.raises(UsageError) as refused:
            verb(EIGHT, out=tmp_path, **TINY)
    finally:
        holder.kill()
        holder.wait()
    said = str(refused.value)
    assert said.startswith(f"{tmp_path} is in use by pid {holder.pid} (") and said.endswith("or add wait=True")


def test_numpy_integers_are_whole_numbers_and_plan_as_ints():
    from stanjax.runner.measure.plan import Request, plan

    request = Request(
        models=[EIGHT], engines=["numpyro"], size="tiny", chains=np.int64(2), repeats=np.int8(1), seed=np.int32(3)
    )
    [job] = plan(request)
    assert (job.config.chains, job.config.seed) == (2, 3) and type(job.config.chains) is int and job.config.hash()


FIXTURE = ROOT / "tests" / "fixtures" / "tiny_repeats2.jsonl"


def measured(engine: str, repeat: int, loaded: bool = False, failed: tuple[str, ...] = ()) -> dict:
    """A worker's part of a record: a committed tiny run's timings and metrics, measured beside other work or not,
    with the gates it is planted to fail."""
    from stanjax.runner.core import records

    [run] = [r for r in records.read(FIXTURE) if (r.model_id, r.engine, r.repeat) == (EIGHT, engine, repeat % 2)]
    busy = 1.2 if loaded else 0.01
    return {
        **{name: getattr(run, name) for name in ("status", "wall_s", "engine_info", "timings", "metrics", "gates")},
        "data_hash": run.data_hash,
        "load": {"other_processes_cores": busy, "load_average_start": 0.0, "load_average_end": 0.0, "loaded": loaded},
        "valid": not failed,
        "failed_gates": list(failed),
    }


@pytest.mark.parametrize(
    "blocks, planted, why",
    [
        (5, {}, None),
        (
            2,
            {},
            "under 5 blocks, no evidence either way: 2 of 2 block(s) with a valid run of each side that an answer may "
            "use; {stan}: 2 run(s), 2 valid; {numpyro}: 2 run(s), 2 valid",
        ),
        (  # issue 64: every run loaded, 9 of 10 failing R-hat, and the comparison said only ratio=None
            5,
            {"loaded": True, "failed": ("rhat",)},
            "no ratio: 0 of 5 block(s) with a valid run of each side that an answer may use; {stan}: 5 run(s), "
            "1 valid, 5 loaded, failed rhat ×4; {numpyro}: 5 run(s), 0 valid, 5 loaded, failed rhat ×5",
        ),
    ],
)
def test_a_comparison_says_why_it_has_no_ratio_or_too_few_blocks(blocks, planted, why, tmp_path, monkeypatch):
    from stanjax.runner.measure import jobs

    def run_one(job, timeout_s, log_dir, draws_file, show):
        spared = job.engine == "stan" and job.repeat == 0  # the one run that passes its gates
        failed = () if spared else planted.get("failed", ())
        return measured(job.engine, job.repeat, planted.get("loaded", False), failed)

    monkeypatch.setattr(jobs, "run_one", run_one)
    found = sj.compare(EIGHT, engines=["stan", "numpyro"], blocks=blocks, out=tmp_path, reruns=0, **TINY)
    labels = {r.engine: r.label for r in found.records}
    assert found.why == (why.format(**labels) if why else None) and found.insufficient is (why is not None)
    assert (found.ratio is None) is bool(planted) and f"why={found.why!r}" in repr(found)
    if found.ratio is not None:
        assert found.ratio.blocks == blocks and (found.numerator, found.denominator) == (
            labels["numpyro"],
            labels["stan"],
        )


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


def test_check_is_the_verbs_logic_with_a_result_object(tmp_path, own_models, capsys):
    example = ROOT / "examples" / "poisson"
    stan, numpyro = example / "stan" / "poisson_regression.stan", example / "jax_models" / "poisson_regression.py"
    found = sj.check(stan, numpyro, data=example / "counts.json", stop_after="static", out=tmp_path)
    assert [stage["name"] for stage in found.stages] == ["static"] and found.stages[0]["ok"]
    assert found.verdict is None and found.exit_code == 0 and found.spec.id == "counts-poisson_regression"
    with pytest.raises(UsageError, match="^MODEL.stan MODEL.py needs data='DATA.json'"):  # its argument, no flag
        sj.check(stan, numpyro)
    with pytest.raises(UsageError, match="^points must be between 2 and 100, got 1$"):
        sj.check(stan, numpyro, data=example / "counts.json", points=1, out=tmp_path)
    with pytest.raises(UnknownChoice, match="unknown option 'pointz' \\(did you mean 'points'\\?"):
        sj.check(stan, numpyro, data=example / "counts.json", pointz=3, out=tmp_path)
    from stanjax.runner.commands.cli import main

    args = ["check", str(stan), str(numpyro), "--data", str(example / "counts.json"), "--points", "1"]
    assert main(args) == 2 and "--points must be between 2 and 100, got 1" in capsys.readouterr().err  # the verb's
