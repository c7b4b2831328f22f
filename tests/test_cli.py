"""Bad input: one line on stderr naming what is wrong (and the valid choices), exit code 2, nothing written."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

import models

from runner.cli import main


@pytest.mark.parametrize("argv, message", [
    (["run", "--models", "nope"], "unknown model 'nope' (choose from: covtype_synth-logistic_regression, "),
    (["run", "--engines", "pymc"], "unknown engine 'pymc' (choose from: stan, numpyro, blackjax_nuts, blackjax_chees)"),
    (["run", "--size", "huge"], "unknown size 'huge' (choose from: tiny, small, default, large)"),
    (["run", "--suite", "everything"], "unknown suite 'everything' (choose from: quick, full, nightly, tiny, gpu)"),
    (["run", "--chains", "0"], "--chains must be between 1 and 65536, got 0"),
    (["run", "--chains", "200"], "--chain-method parallel gives each chain its own CPU device: at most 64 chains"),
    (["run", "--draws", "-5"], "--draws must be between 4 and 1000000, got -5"),
])
def test_bad_run_input_exits_2_with_one_line(argv, message, capsys, tmp_path):
    out = tmp_path / "results"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not out.exists()


@pytest.mark.parametrize("argv", [["run", "--device", "gpu"], ["run", "--suite", "gpu"]])
def test_gpu_without_a_gpu_exits_2_and_never_falls_back_to_the_cpu(argv, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "JAX sees no GPU on this machine" in err and "refusing to fall back" in err
    assert not (tmp_path / "results").exists()


def _plan(*argv):
    from runner.cli import build_parser
    from runner.commands.run import plan

    return plan(build_parser().parse_args(["run", "--suite", "tiny", "--models",
                                           "eight_schools-eight_schools_noncentered", *argv]))


def test_device_policy_on_the_cpu():
    jobs = {job.engine: job.placement for job in _plan("--engines", "stan", "numpyro", "blackjax_nuts")}
    assert (jobs["stan"].device, jobs["stan"].precision) == ("cpu", "float64")
    assert (jobs["numpyro"].precision, jobs["numpyro"].chain_method) == ("float64", "parallel")
    assert (jobs["blackjax_nuts"].precision, jobs["blackjax_nuts"].chain_method) == ("float64", "vectorized")
    vectorized = _plan("--engines", "numpyro", "--chain-method", "vectorized", "--chains", "1000")
    assert vectorized[0].placement.chain_method == "vectorized" and vectorized[0].config.chains == 1000


def test_device_policy_on_a_gpu(monkeypatch):
    from runner.commands import run

    monkeypatch.setattr(run, "gpu_count", lambda: 1)
    jobs = {job.engine: job.placement for job in _plan("--device", "gpu", "--engines", "stan", "numpyro")}
    assert jobs["stan"].device == "cpu"  # Stan is the CPU baseline on the same machine
    assert (jobs["numpyro"].device, jobs["numpyro"].precision, jobs["numpyro"].chain_method) == (
        "gpu", "float32", "vectorized")
    assert _plan("--device", "gpu", "--engines", "numpyro", "--x64")[0].placement.precision == "float64"
    with pytest.raises(models.UsageError, match="needs one GPU per chain: 4 chains, 1 GPU"):
        _plan("--device", "gpu", "--engines", "numpyro", "--chain-method", "parallel")


@pytest.mark.parametrize("bad_value", [np.nan, np.inf])
def test_non_finite_data_is_refused_before_any_run(bad_value, monkeypatch, tmp_path, capsys):
    spec = models.get("covtype_synth-logistic_regression")

    def generate(seed, **sizes):
        data = spec.generate(seed, **sizes)
        data["X"][0, 0] = bad_value
        return data

    monkeypatch.setitem(models.registry(), spec.id, dataclasses.replace(spec, generate=generate))
    out = tmp_path / "results"
    assert main(["run", "--models", spec.id, "--size", "tiny", "--out", str(out)]) == 2
    assert "data entry 'X' holds NaN or inf" in capsys.readouterr().err
    assert not out.exists()


def test_invalid_generator_sizes_are_refused(monkeypatch, tmp_path, capsys):
    spec = models.get("tennis_synth-bradley_terry_hierarchical")
    bad = dataclasses.replace(spec, sizes={**spec.sizes, "tiny": {"n_players": 1, "n_matches": 5}})
    monkeypatch.setitem(models.registry(), spec.id, bad)
    assert main(["run", "--models", spec.id, "--size", "tiny", "--out", str(tmp_path / "r")]) == 2
    assert "n_players >= 2" in capsys.readouterr().err


def test_a_stan_program_that_does_not_compile_is_refused_with_stancs_message(monkeypatch, tmp_path, capsys):
    broken = tmp_path / "stan"
    broken.mkdir()
    (broken / "eight_schools_noncentered.stan").write_text(
        models.get("eight_schools-eight_schools_noncentered").stan_file.read_text().replace("real mu;", "real mu"))
    monkeypatch.setattr(models, "STAN_DIR", broken)
    out = tmp_path / "results"
    assert main(["run", "--models", "eight_schools-eight_schools_noncentered", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "eight_schools_noncentered.stan does not compile: Syntax error" in err
    assert not out.exists()


def test_comma_separated_names_are_accepted(tmp_path, capsys):
    from runner.cli import build_parser
    from runner.commands.run import plan

    args = build_parser().parse_args(["run", "--suite", "tiny", "--models",
                                      "eight_schools-eight_schools_noncentered,covtype_synth-logistic_regression",
                                      "--engines", "stan", "--repeats", "2"])
    jobs = plan(args)
    assert [(j.model_id.split("-")[0], j.engine, j.repeat) for j in jobs] == [
        ("eight_schools", "stan", 0), ("eight_schools", "stan", 1),
        ("covtype_synth", "stan", 0), ("covtype_synth", "stan", 1)]
    assert {j.config.size for j in jobs} == {"tiny"}


@pytest.mark.parametrize("cmdstan_found, done_interface", [(False, "httpstan"), (True, "cmdstanpy")])
def test_resume_counts_a_stan_run_done_only_by_the_front_end_that_would_run_now(cmdstan_found, done_interface,
                                                                                  monkeypatch, tmp_path):
    from runner import records
    from runner.campaign import base_record
    from runner.cli import build_parser
    from runner.commands.run import done_keys, plan
    from runner.engines import stan

    out = tmp_path / "results"
    args = build_parser().parse_args(["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered",
                                      "--engines", "stan", "--repeats", "2", "--out", str(out)])
    job0, job1 = plan(args)
    for job, interface in ((job0, "httpstan"), (job1, "cmdstanpy")):
        records.append(out / records.RESULTS_FILE, {**base_record(job, "c"), "status": "ok",
                                                    "engine_info": {"stan_interface": interface}})
    monkeypatch.setattr(stan, "find_cmdstan", lambda: "/opt/cmdstan" if cmdstan_found else None)
    done = done_keys(out)
    assert [job.key() in done for job in (job0, job1)] == [done_interface == "httpstan", done_interface == "cmdstanpy"]


def test_unwritable_results_path_exits_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["run", "--suite", "tiny", "--out", str(blocker / "results")]) == 2
    assert "cannot write results" in capsys.readouterr().err


def test_report_of_missing_results_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none"), "-o", str(tmp_path / "r")]) == 2
    assert "no results at" in capsys.readouterr().err


def test_report_of_future_schema_exits_2(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"schema_version": 999}) + "\n")
    assert main(["report", str(results), "-o", str(tmp_path / "r")]) == 2
    assert "schema_version 999" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_console_script_help_explains_each_verb():
    for verb in ("run", "report"):
        proc = subprocess.run([sys.executable, "-m", "runner.cli", verb, "--help"], capture_output=True, text=True)
        assert proc.returncode == 0 and f"stanjax {verb}" in proc.stdout
