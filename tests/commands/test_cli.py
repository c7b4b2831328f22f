"""Bad input: one line on stderr naming what is wrong (and the valid choices), exit code 2, nothing written."""

import dataclasses
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from stanjax import models
from stanjax.models import ROOT, UsageError
from stanjax.runner.commands.cli import main
from stanjax.runner.core.config import Job, is_expert, stanc_options
from stanjax.runner.core.engine_registry import label

FIXTURES = ROOT / "tests" / "fixtures"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--models", "nope"], f"unknown model 'nope' (choose from: {', '.join(models.registry())})"),
        (
            ["run", "--engines", "pymc"],
            "unknown engine 'pymc' (choose from: stan, numpyro, blackjax_nuts, blackjax_chees, nutpie_stan, "
            "nutpie_jax, flow_realnvp, flow_maf, advi_meanfield, advi_fullrank, pathfinder, stan_advi_meanfield, "
            "stan_advi_fullrank, stan_pathfinder)",
        ),
        (["run", "--size", "huge"], "unknown size 'huge' (choose from: tiny, small, default, large)"),
        (
            ["run", "--models", "eight_schools-noncentered"],
            "unknown model 'eight_schools-noncentered' (did you mean 'eight_schools-eight_schools_noncentered'? "
            f"choose from: {', '.join(models.registry())})",
        ),
        (["run", "--engines", "numpyr"], "unknown engine 'numpyr' (did you mean 'numpyro'? choose from: "),
        (["run", "--suite", "everything"], "unknown suite 'everything' (choose from: quick, full, nightly, tiny, gpu)"),
        (["run", "--chains", "0"], "--chains must be between 1 and 65536, got 0"),
        (["run", "--chains", "200"], "--chain-method parallel gives each chain its own CPU device: at most 64 chains"),
        (["run", "--draws", "-5"], "--draws must be between 4 and 1000000, got -5"),
        (
            ["run", "--chains", "200", "--chain-method", "vectorized"],
            "--chains 200: from 64 chains on the chains start in 16 superchains (nested R-hat)",
        ),
        (["run", "--cores", "0"], "--cores must be between 1 and "),
        (["run", "--cores", "100000"], "(the cores this process may run on), got 100000"),
        (["run", "--threads-per-chain", "0"], "--threads-per-chain must be at least 1, got 0"),
    ],
)
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
    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.measure.plan import plan

    return plan(
        build_parser().parse_args(
            ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", *argv]
        )
    )


def test_runs_go_in_paired_blocks_whose_engine_order_alternates():
    jobs = _plan("--engines", "stan", "numpyro", "--repeats", "3")
    assert [(job.block, job.engine) for job in jobs] == [
        (0, "stan"),
        (0, "numpyro"),
        (1, "numpyro"),
        (1, "stan"),
        (2, "stan"),
        (2, "numpyro"),
    ]
    assert len({job.pairing("campaign-a") for job in jobs}) == 1  # every setup and block of one campaign pairs
    assert jobs[0].pairing("campaign-a") != jobs[0].pairing("campaign-b")  # never across campaigns
    baseline = _plan("--engines", "stan", "numpyro", "--isa", "x86-64-v2")
    assert {job.placement.isa for job in baseline} == {"x86-64-v2"} and {job.placement.isa for job in jobs} == {
        "native"
    }
    assert baseline[0].pairing("campaign-a") != jobs[0].pairing("campaign-a")  # another build: its own pairing


def test_both_stan_programs_take_their_places_in_every_block_where_a_model_has_an_expert_one():
    eight, dogs = "eight_schools-eight_schools_noncentered", "dogs-dogs"
    jobs = _plan(dogs, "--engines", "stan", "numpyro", "--repeats", "2", "--stan-programs", "model,expert")
    assert [(job.model_id, job.block, job.engine, job.placement.program) for job in jobs] == [
        (eight, 0, "stan", ""),  # no expert program: its own alone
        (eight, 0, "numpyro", ""),
        (eight, 1, "numpyro", ""),
        (eight, 1, "stan", ""),
        (dogs, 0, "stan", ""),
        (dogs, 0, "stan", "expert"),
        (dogs, 0, "numpyro", ""),
        (dogs, 1, "numpyro", ""),
        (dogs, 1, "stan", "expert"),
        (dogs, 1, "stan", ""),
    ]
    assert len({job.pairing("c") for job in jobs if job.model_id == dogs}) == 1  # the three setups pair
    assert len({job.key() for job in jobs}) == len(jobs) and len({job.log_name() for job in jobs}) == len(jobs)
    [expert] = [job for job in jobs if job.placement.program == "expert" and job.block == 0]
    assert Job.from_dict(json.loads(json.dumps(expert.as_dict()))) == expert  # as the worker reads it
    assert label("stan", "bundled", "cpu", "float64", "parallel", program="expert") == "Stan-CPU-expert"
    assert all(job.placement.program == "" for job in _plan("--engines", "stan", "numpyro"))  # the default


def test_stancs_optimiser_is_a_program_of_its_own_in_every_block():
    """--O1 (stanc's optimiser) is asked for per program: model-O1 and expert-O1 run beside model and expert in
    one block, pair with them, and say so in their labels and in what each side had."""
    dogs = "dogs-dogs"
    jobs = _plan(dogs, "--engines", "stan", "--stan-programs", "model,model-O1,expert,expert-O1")
    assert sorted(job.placement.program for job in jobs if job.model_id == dogs) == ["", "O1", "expert", "expert-O1"]
    assert [job.placement.program for job in jobs if job.model_id != dogs] == ["", "O1"]  # no expert program
    assert len({job.pairing("c") for job in jobs if job.model_id == dogs}) == 1
    assert len({job.key() for job in jobs}) == len(jobs) and len({job.log_name() for job in jobs}) == len(jobs)
    assert [stanc_options(p) for p in ("", "O1", "expert", "expert-O1")] == [(), ("--O1",), (), ("--O1",)]
    assert [is_expert(p) for p in ("", "O1", "expert", "expert-O1")] == [False, False, True, True]
    assert label("stan", "bundled", "cpu", "float64", "parallel", program="expert-O1") == "Stan-CPU-expert-O1"


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--stan-programs", "expert"], "eight_schools-eight_schools_noncentered has no expert Stan program"),
        (
            ["--stan-programs", "experts"],
            "unknown Stan program 'experts' (did you mean 'expert'? choose from: model, expert, model-O1, expert-O1)",
        ),
        (["--stan-programs", "expert-O1"], "eight_schools-eight_schools_noncentered has no expert Stan program"),
        (["--stan-programs", "expert", "--engines", "numpyro"], "no Stan sampler is among the engines"),
    ],
)
def test_stan_programs_that_cannot_run_are_one_line_before_anything_runs(argv, said, capsys, tmp_path):
    argv = ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", *argv]
    assert main([*argv, "--out", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and not (tmp_path / "results").exists()


def test_a_model_declaring_its_target_acceptance_runs_it_on_every_engine_and_others_keep_the_runs():
    sp500, eight = "gym_sp500-stochastic_volatility_sp500", "eight_schools-eight_schools_noncentered"
    jobs = _plan(sp500, "--engines", "stan", "numpyro", "blackjax_nuts")
    accept = {(job.model_id, job.engine): job.config.target_accept for job in jobs}
    assert accept == {
        (sp500, "stan"): 0.9,
        (sp500, "numpyro"): 0.9,
        (sp500, "blackjax_nuts"): 0.9,
        (eight, "stan"): 0.8,
        (eight, "numpyro"): 0.8,
        (eight, "blackjax_nuts"): 0.8,
    }
    hashes = {job.model_id: job.config.hash() for job in jobs}
    assert hashes[sp500] != hashes[eight]  # another setting, another measurement: never pooled with 0.8 runs
    assert len({job.config.hash() for job in jobs if job.model_id == sp500}) == 1  # the engines stay paired


def test_a_model_declaring_more_draws_at_a_size_takes_them_there_on_every_engine_and_never_fewer_than_asked():
    softmax, eight = "mnist_synth-multinomial_logistic_regression", "eight_schools-eight_schools_noncentered"

    def draws(*argv):
        return {
            (job.model_id, job.engine): job.config.draws
            for job in _plan(softmax, "--engines", "stan", "numpyro", *argv)
        }

    assert draws("--size", "default") == {
        (softmax, "stan"): 2000,
        (softmax, "numpyro"): 2000,
        (eight, "stan"): 1000,
        (eight, "numpyro"): 1000,
    }
    assert set(draws("--size", "small").values()) == {1000}  # declared for default and large only
    assert set(draws("--size", "default", "--draws", "3000").values()) == {3000}  # more than declared: as asked
    jobs = _plan(softmax, "--size", "default", "--engines", "stan", "numpyro")
    assert len({job.config.hash() for job in jobs if job.model_id == softmax}) == 1  # the engines stay paired


def test_a_model_declaring_its_initial_radius_starts_every_engines_chains_there_and_others_keep_their_hashes():
    ode, eight = "hudson_lynx_hare-lotka_volterra", "eight_schools-eight_schools_noncentered"
    jobs = _plan(ode, "--engines", "stan", "numpyro", "blackjax_nuts")
    radius = {(job.model_id, job.engine): job.config.init_radius for job in jobs}
    assert {r for (model_id, _), r in radius.items() if model_id == ode} == {0.5}
    assert {r for (model_id, _), r in radius.items() if model_id == eight} == {2.0}
    eight_config = next(job.config for job in jobs if job.model_id == eight)
    assert "init_radius" not in eight_config.as_dict()  # the default: hashes of earlier runs stay what they were
    assert len({job.config.hash() for job in jobs if job.model_id == ode}) == 1  # the engines stay paired


def test_the_engines_start_their_chains_within_the_runs_initial_radius(monkeypatch):
    import httpstan.services.arguments as stan_arguments
    import jax

    from stanjax import jax_models
    from stanjax.runner.core.config import RunConfig
    from stanjax.runner.engines.jax_setup import initial_points
    from stanjax.runner.engines.stan_bundled import nuts_arguments

    spec = models.get("eight_schools-eight_schools_noncentered")
    data = spec.data("tiny", seed=1)
    for radius in (0.1, 2.0):
        config = RunConfig(size="tiny", chains=8, init_radius=radius)
        points, *_ = initial_points(jax, jax_models.load(spec.jax_file), data, config, jax.random.PRNGKey(0))
        values = np.concatenate([np.ravel(v) for v in jax.tree.leaves(points)])
        assert np.all(np.abs(values) <= radius) and np.max(np.abs(values)) > radius / 2
    # Stan's: the wrapper's arguments as httpstan reads them from a compiled module (init_radius among them)
    monkeypatch.setattr(stan_arguments, "function_arguments", lambda function, module: ["init_radius", "num_thin"])
    assert nuts_arguments(None, data, RunConfig(init_radius=0.1), seed=1)["init_radius"] == 0.1


def test_device_policy_on_the_cpu():
    jobs = {job.engine: job.placement for job in _plan("--engines", "stan", "numpyro", "blackjax_nuts")}
    assert (jobs["stan"].device, jobs["stan"].precision) == ("cpu", "float64")
    assert (jobs["numpyro"].precision, jobs["numpyro"].chain_method) == ("float64", "parallel")
    assert (jobs["blackjax_nuts"].precision, jobs["blackjax_nuts"].chain_method) == ("float64", "vectorized")
    vectorized = _plan("--engines", "numpyro", "--chain-method", "vectorized", "--chains", "1024")
    assert vectorized[0].placement.chain_method == "vectorized" and vectorized[0].config.chains == 1024


@pytest.mark.parametrize("front_end", ["bundled", "cmdstan"])
def test_cores_and_threads_per_chain(front_end, monkeypatch):
    """16 cores, 4 chains: CmdStan gets 4 threads per chain for a model with a reduce_sum program, the bundled
    Stan one (its forked chains ran reduce_sum on one core); --threads-per-chain sets it; a model without a
    reduce_sum program and the JAX engines keep one. Every job carries its cores."""
    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.core.engine_registry import ENGINES, label
    from stanjax.runner.measure import plan as planning

    monkeypatch.setattr(planning, "usable_cores", lambda: list(range(16)))
    monkeypatch.setitem(ENGINES, "stan", dataclasses.replace(ENGINES["stan"], choose_front_end=lambda _: front_end))
    threaded = next(s for s in models.registry().values() if s.stan_threaded_file)
    plain = models.get("eight_schools-eight_schools_noncentered")
    assert plain.stan_threaded_file is None

    def threads(spec, *argv):
        options = ["run", "--suite", "tiny", "--models", spec.id, "--engines", "stan", "numpyro", *argv]
        jobs = planning.plan(build_parser().parse_args(options))
        assert {job.cores for job in jobs} == {int(argv[1]) if argv[:1] == ("--cores",) else 16}
        return {job.engine: job.placement.threads_per_chain for job in jobs}

    cmdstan = front_end == "cmdstan"
    assert threads(threaded) == {"stan": 4 if cmdstan else 1, "numpyro": 1}
    assert threads(threaded, "--cores", "8") == {"stan": 2 if cmdstan else 1, "numpyro": 1}
    assert threads(threaded, "--cores", "7") == {"stan": 1, "numpyro": 1}  # 7 // 4 = 1: chains fill the cores
    assert threads(threaded, "--threads-per-chain", "3") == {"stan": 3, "numpyro": 1}
    assert threads(plain) == {"stan": 1, "numpyro": 1}
    assert threads(plain, "--threads-per-chain", "4") == {"stan": 1, "numpyro": 1}
    with pytest.raises(UsageError, match="--threads-per-chain 5 with 4 chains needs 20 cores; the runs have 16"):
        threads(threaded, "--threads-per-chain", "5")
    assert label("stan", "bundled", "cpu", "float64", "parallel", None, 4) == "Stan-CPU-4threads"


def test_openblas_threads_share_the_cores_among_the_chains_that_run_at_once():
    from stanjax.runner.core.config import Job, Placement, RunConfig

    job = Job("m", "numpyro", RunConfig(chains=4), placement=Placement(chain_method="parallel"), cores=8)
    assert job.blas_threads() == 2
    assert dataclasses.replace(job, cores=2).blas_threads() == 1
    assert dataclasses.replace(job, placement=Placement(chain_method="vectorized")).blas_threads() == 8


def test_device_policy_on_a_gpu(monkeypatch):
    from stanjax.runner.measure import plan

    monkeypatch.setattr(plan, "gpu_count", lambda: 1)
    jobs = {job.engine: job.placement for job in _plan("--device", "gpu", "--engines", "stan", "numpyro")}
    assert jobs["stan"].device == "cpu"  # Stan is the CPU baseline on the same machine
    assert (jobs["numpyro"].device, jobs["numpyro"].precision, jobs["numpyro"].chain_method) == (
        "gpu",
        "float32",
        "vectorized",
    )
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
        models.get("eight_schools-eight_schools_noncentered").stan_file.read_text().replace("real mu;", "real mu")
    )
    monkeypatch.setattr(models, "STAN_DIR", broken)
    out = tmp_path / "results"
    assert main(["run", "--models", "eight_schools-eight_schools_noncentered", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "eight_schools_noncentered.stan does not compile: Syntax error" in err
    assert not out.exists()
    # stanc's answers are kept per program text: the file mended is checked anew, and broken again refused again
    program = broken / "eight_schools_noncentered.stan"
    program.write_text(program.read_text().replace("real mu\n", "real mu;\n"))
    assert main(["run", "--models", "eight_schools-eight_schools_noncentered", "--estimate", "--out", str(out)]) == 0
    program.write_text(program.read_text().replace("real mu;", "real mu"))
    assert main(["run", "--models", "eight_schools-eight_schools_noncentered", "--out", str(out)]) == 2


def test_comma_separated_names_are_accepted(tmp_path, capsys):
    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.measure.plan import plan

    args = build_parser().parse_args(
        [
            "run",
            "--suite",
            "tiny",
            "--models",
            "eight_schools-eight_schools_noncentered,covtype_synth-logistic_regression",
            "--engines",
            "stan",
            "--repeats",
            "2",
        ]
    )
    jobs = plan(args)
    assert [(j.model_id.split("-")[0], j.engine, j.repeat) for j in jobs] == [
        ("eight_schools", "stan", 0),
        ("eight_schools", "stan", 1),
        ("covtype_synth", "stan", 0),
        ("covtype_synth", "stan", 1),
    ]
    assert {j.config.size for j in jobs} == {"tiny"}


@pytest.mark.parametrize("cmdstan_found, front_end_now", [(False, "bundled"), (True, "cmdstan")])
def test_resume_counts_a_stan_run_done_only_by_the_front_end_that_would_run_now(
    cmdstan_found, front_end_now, monkeypatch, tmp_path
):
    import msgspec

    from stanjax.runner.core import engine_registry, records
    from stanjax.runner.measure.jobs import base_record
    from stanjax.runner.measure.resume import done_keys

    monkeypatch.setattr(engine_registry, "find_cmdstan", lambda: "/opt/cmdstan" if cmdstan_found else None)
    out = tmp_path / "results"
    job0, job1 = _plan("--engines", "stan", "--repeats", "2")
    assert {job0.front_end, job1.front_end} == {front_end_now}
    provenance = records.read(FIXTURES / "tiny_repeats2.jsonl")[0].provenance
    for job, front_end in ((job0, "bundled"), (job1, "cmdstan")):
        record = {
            **base_record(job, "c"),
            "front_end": front_end,
            "status": "ok",
            "valid": True,
            "failed_gates": [],
            "gates": {},
            "provenance": provenance,
        }
        records.append(out / records.RESULTS_FILE, msgspec.convert(record, records.RunRecord, from_attributes=True))
    done = done_keys(out)
    assert [job.key() in done for job in (job0, job1)] == [front_end_now == "bundled", front_end_now == "cmdstan"]


def test_nightly_plans_what_stanjax_run_plans_with_the_same_options(monkeypatch):
    """nightly plans with a ``plan.Request``, as the API does: every option it does not take is run's default (run's
    parser takes its defaults from Request), so it asks for what `stanjax run --suite nightly` with its options asks."""
    import dataclasses

    from stanjax.runner.commands import nightly
    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.measure.plan import Request

    seen = []
    monkeypatch.setattr(nightly, "plan", lambda request: seen.append(request) or [])
    monkeypatch.setattr(nightly.history, "new_folder", lambda *_: (_ for _ in ()).throw(SystemExit("planned")))
    options = ["--models", "eight_schools-eight_schools_noncentered", "--size", "tiny", "--repeats", "3"]
    with pytest.raises(SystemExit, match="planned"):
        main(["nightly", *options])
    [request] = seen
    run_args = vars(build_parser().parse_args(["run", "--suite", "nightly", *options]))
    assert isinstance(request, Request) and request.repeats == 3 and request.suite == "nightly"
    assert dataclasses.asdict(request) == {f.name: run_args[f.name] for f in dataclasses.fields(Request)}


@pytest.mark.parametrize(
    "probe_output, count_or_error",
    [
        ('{"gpus": 2}', 2),
        ('{"error": "Unknown backend: \'gpu\' requested, but no platforms that are instances of gpu are present."}', 0),
        (
            '{"error": "Unable to initialize backend \'cuda\': INTERNAL: cuInit failed: CUDA_ERROR_NO_DEVICE"}',
            "JAX's GPU platform failed to start: Unable to initialize backend 'cuda'",
        ),
        ("", "probing JAX's GPUs failed: ImportError: libcudart.so.12"),
    ],
)
def test_a_broken_gpu_install_is_reported_never_taken_for_no_gpu(probe_output, count_or_error, monkeypatch):
    from stanjax.runner.measure import plan

    done = subprocess.CompletedProcess(
        [], 0 if probe_output else 1, stdout=probe_output + "\n", stderr="Traceback ...\nImportError: libcudart.so.12\n"
    )
    monkeypatch.setattr(plan.subprocess, "run", lambda *a, **k: done)
    plan.gpu_count.cache_clear()
    try:
        if isinstance(count_or_error, int):
            assert plan.gpu_count() == count_or_error
        else:
            with pytest.raises(models.UsageError, match=re.escape(count_or_error)):
                plan.gpu_count()
    finally:
        plan.gpu_count.cache_clear()


def test_a_bug_in_a_data_generator_surfaces_as_a_bug_not_as_bad_input(monkeypatch, tmp_path):
    spec = models.get("eight_schools-eight_schools_noncentered")

    def generate(seed, **sizes):
        return {"J": int("eight")}  # a bug: ValueError from inside the generator, not its size validation

    monkeypatch.setitem(models.registry(), spec.id, dataclasses.replace(spec, generate=generate))
    with pytest.raises(ValueError, match="invalid literal"):
        main(["run", "--models", spec.id, "--size", "tiny", "--out", str(tmp_path / "r")])


def test_a_model_spec_that_fails_to_load_is_one_line_naming_the_file(monkeypatch, tmp_path, capsys):
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "broken_data-broken_model.py").write_text(
        "from stanjax.models import ModelSpec\n\nSPEC = ModelSpec(id=1)\n"
    )
    monkeypatch.setattr(models, "MODELS_DIR", folder)
    models.registry.cache_clear()
    try:
        assert main(["run", "--suite", "tiny", "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "broken_data-broken_model.py (line 3) does not load: TypeError" in err
        assert main(["report", str(FIXTURES), "-o", str(tmp_path / "report")]) == 2
    finally:
        models.registry.cache_clear()


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
        proc = subprocess.run(
            [sys.executable, "-m", "stanjax.runner.commands.cli", verb, "--help"], capture_output=True, text=True
        )
        assert proc.returncode == 0 and f"stanjax {verb}" in proc.stdout


def test_two_campaigns_never_share_a_sampler_seed_and_engines_of_a_repeat_do():
    first, second = (
        _plan("--engines", "stan", "numpyro", "--repeats", "2"),
        _plan("--engines", "stan", "numpyro", "--repeats", "2"),
    )
    seeds = {(j.engine, j.repeat): j.sampler_seed for j in first}
    assert seeds[("stan", 0)] == seeds[("numpyro", 0)] != seeds[("stan", 1)]  # a repeat: one seed, every engine
    assert not set(seeds.values()) & {j.sampler_seed for j in second}  # another campaign: independent draws
    assert [j.key() for j in first] == [j.key() for j in second]  # yet the same runs for --resume


@pytest.mark.parametrize(
    "cmdstan_found, asked, front_end",
    [(False, "auto", "bundled"), (True, "auto", "cmdstan"), (True, "bundled", "bundled"), (True, "cmdstan", "cmdstan")],
)
def test_the_stan_front_end_is_chosen_explicitly(cmdstan_found, asked, front_end, monkeypatch):
    from stanjax.runner.core import engine_registry

    monkeypatch.setattr(engine_registry, "find_cmdstan", lambda: "/opt/cmdstan" if cmdstan_found else None)
    jobs = _plan("--engines", "stan", "numpyro", "--stan", asked)
    assert {(j.engine, j.front_end) for j in jobs} == {("stan", front_end), ("numpyro", "numpyro")}


def test_both_stan_front_ends_run_in_every_block(monkeypatch):
    """--stan bundled,cmdstan: Stan's NUTS through both front ends, each program both ways, in one block that
    pairs them (the front-end table's runs), with keys, log names and lines of their own; 'auto' beside a named
    one and an unknown name are one line each."""
    from stanjax.runner.core import engine_registry

    monkeypatch.setattr(engine_registry, "find_cmdstan", lambda: "/opt/cmdstan")
    dogs = "dogs-dogs"
    jobs = _plan(dogs, "--engines", "stan", "numpyro", "--stan", "bundled,cmdstan", "--stan-programs", "model,expert")
    block = [
        (job.engine, job.placement.program, job.front_end) for job in jobs if job.model_id == dogs and not job.block
    ]
    assert block == [
        ("stan", "", "bundled"),
        ("stan", "", "cmdstan"),
        ("stan", "expert", "bundled"),
        ("stan", "expert", "cmdstan"),
        ("numpyro", "", "numpyro"),
    ]
    assert len({job.pairing("c") for job in jobs if job.model_id == dogs}) == 1
    assert len({job.key() for job in jobs}) == len(jobs) and len({job.log_name() for job in jobs}) == len(jobs)
    assert sum("through CmdStan" in job.label() for job in jobs) == sum(job.front_end == "cmdstan" for job in jobs)
    with pytest.raises(UsageError, match="'auto' is one front end or the other"):
        _plan("--stan", "auto,cmdstan")
    with pytest.raises(UsageError, match="unknown Stan front end 'cmstan' \\(did you mean 'cmdstan'"):
        _plan("--stan", "bundled,cmstan")


def test_cmdstan_asked_for_where_none_is_installed_is_bad_input(monkeypatch, tmp_path, capsys):
    from stanjax.runner.core import engine_registry

    monkeypatch.setattr(engine_registry, "find_cmdstan", lambda: None)
    assert main(["run", "--suite", "tiny", "--stan", "cmdstan", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--stan cmdstan: no CmdStan installation found" in err


@pytest.mark.parametrize("engine", ["stan_advi_meanfield", "stan_advi_fullrank", "stan_pathfinder"])
def test_stans_approximations_where_no_cmdstan_is_installed_are_bad_input(engine, monkeypatch, tmp_path, capsys):
    """The bundled Stan only samples: Stan's ADVI and Pathfinder are refused with the reason before anything runs,
    whatever --stan says; where a CmdStan is found they run through it, on the plain program (one thread a chain:
    ADVI is one process, Pathfinder threads its paths itself), under their own labels."""
    from stanjax.runner.core import engine_registry
    from stanjax.runner.core.engine_registry import label
    from stanjax.runner.measure import plan as planning

    monkeypatch.setattr(engine_registry, "find_cmdstan", lambda: None)
    for asked in ("auto", "cmdstan"):
        assert main(["run", "--suite", "tiny", "--engines", engine, "--stan", asked, "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{engine}: Stan's ADVI and Pathfinder run through CmdStan" in err
    assert not (tmp_path / "r").exists()
    monkeypatch.setattr(engine_registry, "find_cmdstan", lambda: "/opt/cmdstan")
    monkeypatch.setattr(planning, "usable_cores", lambda: list(range(16)))
    threaded = next(s for s in models.registry().values() if s.stan_threaded_file)
    jobs = _plan("--engines", engine, "stan", "--models", threaded.id)
    placements = {job.engine: (job.front_end, job.placement.threads_per_chain) for job in jobs}
    assert placements == {engine: ("cmdstan", 1), "stan": ("cmdstan", 4)}
    method = engine.removeprefix("stan_").replace("advi_", "ADVI-").replace("pathfinder", "Pathfinder")
    assert label(engine, "cmdstan", "cpu", "float64", "parallel") == f"CmdStan-{method}-CPU"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seed", "-5"], "--seed must be between 0 and 4294967295, got -5"),
        (["--models", "covtype_synth-logistic_regression", "--seed", "-5"], "--seed must be between 0"),
        (["--timeout", "0"], "--timeout must be a positive number of seconds, got 0"),
        (["--timeout", "-5"], "--timeout must be a positive number of seconds, got -5"),
        (["--timeout", "nan"], "--timeout must be a positive number of seconds, got nan"),
    ],
)
def test_bad_seed_or_timeout_is_one_line_before_anything_runs(argv, message, capsys, tmp_path):
    out = tmp_path / "results"
    assert main(["run", "--suite", "tiny", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not out.exists()


def test_a_cache_folder_that_cannot_be_created_is_one_line(monkeypatch, capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("STANJAX_CACHE", str(blocker / "cache"))
    assert main(["run", "--suite", "tiny", "--out", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot use the cache folder {blocker / 'cache'} (STANJAX_CACHE)" in err


@pytest.mark.parametrize("parts", [1, 2, 3, 5])
def test_shards_are_disjoint_and_together_the_whole_plan(parts):
    from stanjax.runner.measure.plan import shard

    args = ("--models", "all", "--engines", "stan", "numpyro", "--repeats", "2")
    whole = _plan(*args)
    pieces = [shard(whole, i, parts) for i in range(1, parts + 1)]
    keys = [job.key() for piece in pieces for job in piece]
    assert sorted(keys) == sorted(job.key() for job in whole) and len(set(keys)) == len(keys)
    for piece in pieces:  # every engine and repeat of a model on one machine, where they can be paired
        for job in piece:
            assert all(other in piece for other in whole if other.model_id == job.model_id)
    assert [job.key() for job in shard(_plan(*args), 1, parts)] == [job.key() for job in pieces[0]]  # again alike


@pytest.mark.parametrize("bad", ["0/2", "3/2", "x", "1/0"])
def test_a_bad_shard_is_refused_by_the_parser_in_one_line(bad, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--shard", bad])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and err.startswith("stanjax run: error: argument --shard: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--out", ""],
        ["study", "data-size", "--out", ""],
        ["campaign", "gpu", "--out", ""],
        ["check", "eight_schools-eight_schools_noncentered", "--out", ""],
        ["nightly", "--history", ""],
        ["report", "out/results", "-o", ""],
        ["import", "arma-arma11", "--posteriordb", ".", "--into", ""],
    ],
)
def test_an_empty_path_is_one_line_never_the_current_folder(argv, capsys, tmp_path, monkeypatch):
    """``--out "$OUT"`` with OUT unset: ``Path("")`` is the current folder, where results, a report or a model
    would have gone silently."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and ": an empty path; name one" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", "--engines", "stan"],
        ["study", "data-size", "--scale", "tiny", "--engines", "numpyro"],
        ["campaign", "gpu", "--cores", "2", "--gpu-cores", "1", "--history", str(FIXTURES)],
        ["check", "eight_schools-eight_schools_noncentered"],  # before its static stage lays anything out
    ],
)
def test_every_verb_that_writes_a_folder_is_refused_while_another_process_writes_there(
    argv, capsys, tmp_path, monkeypatch
):
    from stanjax.runner.commands import campaign
    from stanjax.runner.core.folder_lock import LOCK_FILE
    from stanjax.runner.pairing import check
    from tests.core.test_folder_lock import other

    monkeypatch.setattr(campaign, "check_gpu_visible", lambda asked: None)
    monkeypatch.setattr(check, "in_worker", lambda *args: pytest.fail("a check's stage ran"))
    out = tmp_path / "out"
    holder = other(out, 600)
    try:
        assert main([*argv, "--out", str(out)]) == 2
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"error: {out} is in use by pid {holder.pid} (" in err
    assert [p.name for p in out.iterdir()] == [LOCK_FILE]  # nothing else written


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--suite", "tiny", "--out"],
        ["study", "data-size", "--out"],
        ["campaign", "gpu", "--cores", "2", "--gpu-cores", "1", "--out"],
        ["nightly", "--history"],
    ],
)
def test_a_file_where_results_would_go_is_one_line_before_any_planning(argv, capsys, tmp_path, monkeypatch):
    """``--out FILE`` planned for 4.5 s (the static checks) before mkdir said "File exists"."""
    from stanjax.runner.commands import nightly, run

    for verb in (run, nightly):
        monkeypatch.setattr(verb, "plan", lambda *a: pytest.fail("planned"))
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main([*argv, str(blocker)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write results to {blocker}: it is a file, not a folder" in err


def test_report_merges_the_folders_of_several_machines(tmp_path):
    from msgspec.structs import replace

    from stanjax.runner.core import records

    runs = records.read(FIXTURES / "tiny_repeats2.jsonl")
    for name, cores in (("a", 2), ("b", 64)):
        machine = replace(runs[0].provenance.machine, cores=cores)
        for r in runs:
            records.append(
                tmp_path / name / "results.jsonl", replace(r, provenance=replace(r.provenance, machine=machine))
            )
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "figures.html").read_text()  # the ESS/s bars: a panel per machine
    machines = {m for m in re.findall(r'data-machine="([^"]+)"', html)}
    assert len(machines) == 2 and all(m.endswith(("-2core", "-64core")) for m in machines)


def test_estimate_says_each_models_time_and_the_total_and_runs_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("stanjax.runner.commands.run.run_jobs", lambda *a, **k: pytest.fail("ran"))
    out = tmp_path / "results"
    assert (
        main(
            [
                "run",
                "--suite",
                "tiny",
                "--models",
                "eight_schools-eight_schools_noncentered",
                "--engines",
                "stan",
                "numpyro",
                "--repeats",
                "5",
                "--estimate",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("eight_schools-eight_schools_noncentered (tiny): 10 runs, ~") and "median of" in lines[0]
    assert lines[-1].startswith("total: 10 runs, ~") and not (out / "results.jsonl").exists()


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`stanjax history | head`: the pipe closes before the listing ends; stanjax stops quietly, exit 0."""
    child = subprocess.Popen(
        [sys.executable, "-m", "stanjax.runner.commands.cli", "history"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    child.stdout.close()  # before the child writes a line (it takes a second to start)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 0 and b"Traceback" not in stderr and b"BrokenPipe" not in stderr


def test_the_compile_verb_builds_each_stan_program_asked_for_where_the_model_has_it(monkeypatch):
    """``stanjax compile --stan-programs``: each model's programs as runs name them, one task each (a model with
    no expert program builds its own alone), each built as a run with that program builds it."""
    from stanjax.runner.commands import compile as compile_verb

    tasks = []
    monkeypatch.setattr(compile_verb, "compile_each", lambda asked, jobs: tasks.extend(asked) or 0)
    monkeypatch.setattr(compile_verb, "prepare", lambda programs, jobs: None)
    eight = "eight_schools-eight_schools_noncentered"
    argv = ["compile", "--models", eight, "dogs-dogs", "--stan-programs", "model,expert-O1", "--jobs", "2"]
    assert main(argv) == 0
    assert [label for label, _ in tasks] == [eight, "dogs-dogs", "dogs-dogs (expert-O1 program)"]
    built = [compile_verb.parse_model_command(command[3:]) for _, command in tasks]
    assert [(ids, placement.program) for ids, placement in built] == [
        ([eight], ""),
        (["dogs-dogs"], ""),
        (["dogs-dogs"], "expert-O1"),
    ]


def test_a_run_compiles_each_stan_program_once_before_the_first_run(tmp_path, monkeypatch, capsys):
    """A cold `make report` compiled its programs one after another inside its first runs: every program the bundled
    Stan builds for the runs is compiled first, once (not per block), at once on the usable cores, the longest
    first; none for JAX-only runs."""
    from stanjax.runner.commands import compile as compile_verb
    from stanjax.runner.commands import run

    done = []
    monkeypatch.setattr(run, "compile_each", lambda tasks, jobs, log: done.append(("compile", tasks, jobs)) or 0)
    monkeypatch.setattr(run, "run_jobs", lambda jobs, *a, **k: done.append(("run", jobs, 0)) or [])
    prepared = []  # what the programs to compile share is built first, for those programs only
    monkeypatch.setattr(run, "prepare", lambda programs, at_once, log: prepared.append([m for m, _ in programs]))
    monkeypatch.setattr(compile_verb, "cached", lambda model_id, placement: False)
    eight = "eight_schools-eight_schools_noncentered"
    argv = ["run", "--suite", "tiny", "--models", eight, "dogs-dogs", "--repeats", "2", "--out", str(tmp_path / "r")]
    assert main([*argv, "--engines", "stan", "numpyro", "--stan-programs", "model,expert"]) == 0
    (step, tasks, at_once), (then, jobs, _) = done
    assert step == "compile" and then == "run" and len(jobs) == 10  # dogs 3 setups, eight schools 2; 2 blocks each
    # the longest program first (1,371 bytes, 921, 270): a long one left for last keeps the other cores idle
    assert [name for name, _ in tasks] == ["dogs-dogs (expert program)", "dogs-dogs", eight]
    assert at_once == min(len(os.sched_getaffinity(0)), 3)
    assert "Stan programs: 3 of 3 to compile (0 in the cache)" in capsys.readouterr().out
    # a program in httpstan's cache is not given a process of its own
    done.clear()
    monkeypatch.setattr(compile_verb, "cached", lambda model_id, placement: placement.program == "expert")
    assert main([*argv, "--engines", "stan", "numpyro", "--stan-programs", "model,expert"]) == 0
    assert [name for name, _ in done[0][1]] == ["dogs-dogs", eight]
    assert prepared == [["dogs-dogs", "dogs-dogs", eight], ["dogs-dogs", eight]]
    assert "Stan programs: 2 of 3 to compile (1 in the cache)" in capsys.readouterr().out
    done.clear()
    assert main([*argv, "--engines", "numpyro"]) == 0
    assert [step for step, _, _ in done] == ["run"]
