"""`stanjax check` and `stanjax run --model-dir`: a pair of one's own, checked before anything compiles or samples.

The worked example of the README (examples/poisson: a Poisson regression, not in the zoo) is the user's pair; copies
of its files in tmp_path carry each planted mistake. Static checks compile nothing; the tests that build or run the
example's Stan program (one compile, then httpstan's cache) are marked ``stan``, those that sample ``slow``."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import jax_models
import models
from models import ROOT
from runner import static_checks
from runner.cli import main
from runner.commands import check

EXAMPLE = ROOT / "examples" / "poisson"
EXAMPLE_ID = "counts_synth-poisson_regression"
ZOO = list(models.registry().values())


@pytest.fixture
def own_models(monkeypatch):
    """Model folders taken in during a test leave the registry, the environment and jax_models as they were."""
    monkeypatch.setenv(models.MODEL_DIRS_ENV, "")
    path, modules = list(jax_models.__path__), set(sys.modules)
    models.registry.cache_clear()
    yield
    jax_models.__path__[:] = path
    for name in set(sys.modules) - modules:
        if name.startswith("jax_models."):
            del sys.modules[name]
    models.registry.cache_clear()


@pytest.fixture
def pair(tmp_path):
    """The example's three files, copied: (Stan program, NumPyro file, data file)."""
    files = (tmp_path / "poisson_regression.stan", tmp_path / "poisson_regression.py", tmp_path / "counts.json")
    for source, copy in zip((EXAMPLE / "stan" / files[0].name, EXAMPLE / "jax_models" / files[1].name,
                             EXAMPLE / "counts.json"), files):
        shutil.copyfile(source, copy)
    return files


def nothing_may_sample(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("sampled or compiled after a static problem")

    monkeypatch.setattr(check, "density_stage", refuse)
    monkeypatch.setattr(check, "run_campaign", refuse)


@pytest.mark.parametrize("spec", ZOO, ids=[spec.id for spec in ZOO])
def test_every_zoo_pair_passes_the_static_checks(spec):
    findings = static_checks.check(spec, spec.data("tiny", seed=1))
    assert findings.problems == []
    assert list(findings.parameters) == [p.name for p in spec.parameters]
    # a note for exactly the parameters the spec declares with different transforms (the density test's view)
    assert {note.split("'")[1] for note in findings.notes} == set(spec.different_transforms)


def test_stancs_syntax_tree_gives_shapes_bounds_and_constrained_types(tmp_path):
    program = tmp_path / "shapes.stan"
    program.write_text("""
data { int<lower=1> N; int K; array[N] int<lower=0, upper=1> y; real lb; }
transformed data { int K2 = K * 2; int M = (N + 1) %/% 2; int changed = 1; changed = 3; }
parameters {
  real<lower=lb, upper=lb + 3> u;
  array[2] vector<lower=-1>[K - 1] gamma;
  simplex[K] w;
  vector<offset=1, multiplier=2>[K2] t2;
  matrix[M, max(y) + 1] m;
  vector[changed] unknown;
}
model { }
""")
    parsed = static_checks.read_program(program)
    env = parsed.environment({"N": 5, "K": 3, "y": [0, 1, 1, 0, 1], "lb": 0.5})
    found = {p.name: (p.shape(env), p.constraint(env), p.text()) for p in parsed.parameters}
    assert found == {
        "u": ((), ("interval", 0.5, 3.5), "real<lower=lb, upper=lb + 3>"),
        "gamma": ((2, 2), ("lower", -1, ), "array[2] vector<lower=-1>[K - 1]"),
        "w": ((3,), ("simplex",), "simplex[K]"),
        "t2": ((6,), ("real", "affine"), "vector<offset=1, multiplier=2>[K2]"),
        "m": ((3, 2), ("real",), "matrix[M, max(y) + 1]"),
        "unknown": (None, ("real",), "vector[changed]"),  # reassigned in transformed data: known only at run time
    }
    assert [d.name for d in parsed.data] == ["N", "K", "y", "lb"]


def test_the_examples_data_file_is_its_generators_tiny_data(own_models):
    models.add_model_dir(EXAMPLE)
    generated = models.get(EXAMPLE_ID).data("tiny", seed=1)
    given = check.read_json_data(EXAMPLE / "counts.json")
    assert given.keys() == generated.keys()
    assert all(np.array_equal(given[key], generated[key]) for key in given)


@pytest.mark.parametrize("plant, message", [
    (lambda stan, py, data: py.write_text(py.read_text().replace('"beta"', '"b"')),
     "NumPyro site 'b' is not a Stan parameter and Stan parameter 'beta' (vector[K]) has no NumPyro site: name them "
     "alike (Stan parameters: alpha, beta[3]; NumPyro sites: alpha, b[3])"),
    (lambda stan, py, data: data.write_text(json.dumps({k: v for k, v in json.loads(data.read_text()).items()
                                                        if k != "K"})),
     "data has no 'K': poisson_regression.stan's data block declares int<lower=1> K, and poisson_regression() "
     "takes it"),
    (lambda stan, py, data: (data.write_text(json.dumps({**json.loads(data.read_text()), "offset": [0.0] * 100})),
                             py.write_text(py.read_text().replace("(N, K, X, y=None)", "(N, K, X, offset, y=None)"))),
     "data key 'offset' is not in poisson_regression.stan's data block (N, K, X, y); poisson_regression() takes it"),
    (lambda stan, py, data: py.write_text(py.read_text().replace("dist.Normal(0.0, 2.5)", "dist.HalfNormal(2.5)")),
     "'alpha': Stan declares real (unconstrained), the NumPyro site's support is lower=0: not the same posterior"),
    (lambda stan, py, data: data.write_text(json.dumps({**json.loads(data.read_text()),
                                                        "y": json.loads(data.read_text())["y"][1:]})),
     "data 'y' has shape (99,), but poisson_regression.stan's array[N] int<lower=0> y has shape (100,)"),
], ids=["renamed site", "missing data key", "data key only NumPyro takes", "constraint", "data shape"])
def test_a_static_problem_is_one_line_and_exit_2_before_anything_samples(plant, message, pair, own_models,
                                                                           monkeypatch, tmp_path, capsys):
    plant(*pair)
    nothing_may_sample(monkeypatch)
    stan, py, data = pair
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"stanjax check: error: counts-poisson_regression: {message}\n"
    assert captured.out == "" and not (tmp_path / "out" / "results.jsonl").exists()


def test_data_keys_neither_model_uses_are_ignored_with_a_note(pair, own_models, tmp_path, capsys):
    """posteriordb's data files carry keys a program does not declare; CmdStan ignores them, and so does check,
    saying which, and leaves them out of the laid-out data both engines read."""
    stan, py, data = pair
    data.write_text(json.dumps({**json.loads(data.read_text()), "offset": [0.0] * 100, "source": "posteriordb"}))
    out = tmp_path / "out"
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(out), "--stop-after", "static"]) == 0
    assert ("note: ignored data key(s) offset, source: in neither poisson_regression.stan's data block nor "
            "poisson_regression()'s arguments (CmdStan ignores them too)") in capsys.readouterr().out
    laid_out = json.loads((out / "model" / "models" / "counts-poisson_regression.json").read_text())
    assert sorted(laid_out) == ["K", "N", "X", "y"]


def test_every_run_starts_with_the_static_checks(pair, own_models, monkeypatch, tmp_path, capsys):
    """`stanjax run --model-dir`: a folder whose NumPyro model names a site differently stops before any run."""
    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    jax_file = folder / "jax_models" / "poisson_regression.py"
    jax_file.write_text(jax_file.read_text().replace('"alpha"', '"intercept"'))
    monkeypatch.setattr("runner.commands.run.run_campaign", lambda *a, **k: pytest.fail("ran"))
    out = tmp_path / "results"
    assert main(["run", "--model-dir", str(folder), "--size", "tiny", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{EXAMPLE_ID}: NumPyro site 'intercept' is not a Stan parameter and Stan " \
        "parameter 'alpha' (real) has no NumPyro site" in err
    assert not out.exists()


def test_a_model_folder_may_not_reuse_a_zoo_models_name(own_models, tmp_path, capsys):
    folder = tmp_path / "mine"
    for sub in ("models", "stan", "jax_models"):
        (folder / sub).mkdir(parents=True)
    spec = (EXAMPLE / "models" / f"{EXAMPLE_ID}.py").read_text().replace("poisson_regression", "logistic_regression")
    (folder / "models" / "counts_synth-logistic_regression.py").write_text(spec)
    assert main(["run", "--model-dir", str(folder), "--out", str(tmp_path / "r")]) == 2
    assert "the model name 'logistic_regression' is taken by" in capsys.readouterr().err


def test_check_help_explains_the_stages(capsys):
    with pytest.raises(SystemExit) as done:
        main(["check", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert all(word in text for word in ("static", "density", "run", "--data", "--model-dir", "MCSE"))


@pytest.mark.stan
def test_a_planted_prior_change_fails_the_density_check_naming_the_parameter(pair, own_models, tmp_path, capsys):
    """beta's prior widened from normal(0, 1) to normal(0, 1.5) in a copy of the NumPyro model (the Stan program is
    the example's, so it compiles once for every test)."""
    stan, py, data = pair
    py.write_text(py.read_text().replace("dist.Normal(0.0, 1.0)", "dist.Normal(0.0, 1.5)"))
    out = tmp_path / "out"
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(out), "--stop-after", "density"]) == 1
    density_line = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("density"))
    assert "FAIL" in density_line and "log densities do not differ by one constant" in density_line
    assert "the difference moves with beta (" in density_line and "not with alpha" in density_line
    assert "FAIL" in (out / "check.html").read_text()


@pytest.mark.stan
@pytest.mark.slow
def test_a_zoo_pair_passes_the_whole_check_at_tiny_size(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["check", "eight_schools-eight_schools_noncentered", "--repeats", "1", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    for stage in ("static", "density", "run"):
        assert any(line.lstrip().startswith(stage) and " ok " in line for line in text.splitlines()), text
    assert "engines agree  yes" in text and "NumPyro / Stan ESS/s" in text
    records = (out / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["engine"] for line in records) == ["numpyro", "stan"]
    assert "PASS" in (out / "check.html").read_text()


@pytest.mark.stan
@pytest.mark.slow
def test_a_model_folder_runs_end_to_end_through_run_model_dir(tmp_path):
    folder = tmp_path / "my_models"
    shutil.copytree(EXAMPLE, folder)
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "runner.cli", "run", "--model-dir", str(folder), "--suite", "tiny",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((r["model_id"], r["engine"], r["status"]) for r in records) == [
        (EXAMPLE_ID, "numpyro", "ok"), (EXAMPLE_ID, "stan", "ok")]
    assert all(r["sizes"] == {"N": 100, "K": 3} for r in records)


def test_the_speed_ratio_is_taken_within_paired_repeats_and_needs_five_for_an_interval():
    """Per repeat (a block of both engines back to back) NumPyro's ESS/s over Stan's; the median, and an interval
    only from 5 repeats on. A repeat with one engine's run invalid pairs with nothing."""
    from types import SimpleNamespace

    from runner.commands.check import speed_ratio, speed_text

    def run(engine, block, ess_per_s, valid=True):
        return SimpleNamespace(engine=engine, status="ok", valid=valid, block_of=("c", block),
                               metrics=SimpleNamespace(ess_per_s=ess_per_s))

    runs = [run("stan", b, 100.0) for b in range(5)] + [run("numpyro", b, 100.0 * (b + 1)) for b in range(5)]
    ratio = speed_ratio(runs)
    assert (ratio.value, ratio.low, ratio.high, ratio.blocks) == (3.0, 1.0, 5.0, 5)
    assert "90 % interval 1 to 5 over 5 paired repeats" in speed_text(ratio)
    runs[0] = run("stan", 0, 100.0, valid=False)
    fewer = speed_ratio(runs)
    assert fewer.blocks == 4 and "too few for an interval (5 needed)" in speed_text(fewer)
