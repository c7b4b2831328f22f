"""`stanjax check` and `stanjax run --model-dir`: a pair of one's own, checked before anything compiles or samples.

The worked example of the README (examples/poisson: a Poisson regression, not in the zoo) is the user's pair; copies
of its files in tmp_path carry each planted mistake. Static checks compile nothing; the tests that build or run the
example's Stan program (one compile, then httpstan's cache) are marked ``stan``, those that sample ``slow``."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import markupsafe
import numpy as np
import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.reports.stats import Ratio
from stanjax.runner.commands.cli import main
from stanjax.runner.core import engine_registry
from stanjax.runner.core.records import read as read_records
from stanjax.runner.measure import diagnose, stan_program, static_checks
from stanjax.runner.pairing import agreement, check, check_verdicts, pair_files, run_stage, speed_advice

EXAMPLE = ROOT / "examples" / "poisson"
EXAMPLE_ID = "counts_synth-poisson_regression"
ZOO = list(models.registry().values())


@pytest.fixture
def pair(tmp_path):
    """The example's three files, copied: (Stan program, NumPyro file, data file)."""
    files = (tmp_path / "poisson_regression.stan", tmp_path / "poisson_regression.py", tmp_path / "counts.json")
    for source, copy in zip(
        (EXAMPLE / "stan" / files[0].name, EXAMPLE / "jax_models" / files[1].name, EXAMPLE / "counts.json"), files
    ):
        shutil.copyfile(source, copy)
    return files


def nothing_may_sample(monkeypatch):
    """Only the static stage's worker may start: no density stage's (the Stan compile, the short run), no run."""
    static_only = check.in_worker

    def refuse(*args, **kwargs):
        raise AssertionError("sampled or compiled after a static problem")

    def static_alone(stage, *args, **kwargs):
        return static_only(stage, *args, **kwargs) if stage == "static" else refuse()

    monkeypatch.setattr(check, "in_worker", static_alone)
    monkeypatch.setattr(run_stage, "run_jobs", refuse)


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
  vector[size(y)] s;
}
model { }
""")
    parsed = stan_program.read_program(program)
    env = parsed.environment({"N": 5, "K": 3, "y": [0, 1, 1, 0, 1], "lb": 0.5})
    found = {p.name: (p.shape(env), p.constraint(env), p.text()) for p in parsed.parameters}
    assert found == {
        "u": ((), ("interval", 0.5, 3.5), "real<lower=lb, upper=lb + 3>"),
        "gamma": (
            (2, 2),
            (
                "lower",
                -1,
            ),
            "array[2] vector<lower=-1>[K - 1]",
        ),
        "w": ((3,), ("simplex",), "simplex[K]"),
        "t2": ((6,), ("real", "affine"), "vector<offset=1, multiplier=2>[K2]"),
        "m": ((3, 2), ("real",), "matrix[M, max(y) + 1]"),
        "unknown": (None, ("real",), "vector[changed]"),  # reassigned in transformed data: known only at run time
        "s": ((5,), ("real",), "vector[size(y)]"),  # a size function's int, not a NumPy scalar
    }
    assert [d.name for d in parsed.data] == ["N", "K", "y", "lb"]


def test_the_examples_data_file_is_its_generators_tiny_data(own_models):
    models.add_model_dir(EXAMPLE)
    generated = models.get(EXAMPLE_ID).data("tiny", seed=1)
    given = pair_files.read_json_data(EXAMPLE / "counts.json")
    assert given.keys() == generated.keys()
    assert all(np.array_equal(given[key], generated[key]) for key in given)


@pytest.mark.parametrize(
    "plant, message",
    [
        (
            lambda stan, py, data: py.write_text(py.read_text().replace('"beta"', '"b"')),
            "NumPyro site 'b' is not a Stan parameter and Stan parameter 'beta' (vector[K]) has no NumPyro site: name them "
            "alike (Stan parameters: alpha, beta[3]; NumPyro sites: alpha, b[3])",
        ),
        (
            lambda stan, py, data: data.write_text(
                json.dumps({k: v for k, v in json.loads(data.read_text()).items() if k != "K"})
            ),
            "data has no 'K': poisson_regression.stan's data block declares int<lower=1> K, and poisson_regression() "
            "takes it",
        ),
        (
            lambda stan, py, data: (
                data.write_text(json.dumps({**json.loads(data.read_text()), "offset": [0.0] * 100})),
                py.write_text(py.read_text().replace("(N, K, X, y=None)", "(N, K, X, offset, y=None)")),
            ),
            "data key 'offset' is not in poisson_regression.stan's data block (N, K, X, y); poisson_regression() takes it",
        ),
        (
            lambda stan, py, data: py.write_text(
                py.read_text().replace("dist.Normal(0.0, 1.0).expand([K]).to_event(1)", "dist.Dirichlet(jnp.ones(K))")
            ),
            "'beta': Stan declares vector[K] (unconstrained), the NumPyro site's support is simplex: not the same "
            "posterior",
        ),
        (
            lambda stan, py, data: data.write_text(
                json.dumps({**json.loads(data.read_text()), "y": json.loads(data.read_text())["y"][1:]})
            ),
            "data 'y' has shape (99,), but poisson_regression.stan's array[N] int<lower=0> y has shape (100,)",
        ),
        (
            lambda stan, py, data: data.write_text(data.read_text().replace('"X":', '"Xs":')),
            "data has no 'X': poisson_regression.stan's data block declares matrix[N, K] X, and poisson_regression() "
            "takes it (the data have 'Xs', which neither side declares: a misspelling?)",
        ),
    ],
    ids=[
        "renamed site",
        "missing data key",
        "data key only NumPyro takes",
        "constraint",
        "data shape",
        "misspelled key",
    ],
)
def test_a_static_problem_is_one_line_and_exit_2_before_anything_samples(
    plant, message, pair, own_models, monkeypatch, tmp_path, capsys
):
    plant(*pair)
    nothing_may_sample(monkeypatch)
    stan, py, data = pair
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"stanjax check: error: counts-poisson_regression: {message}\n"
    assert captured.out == "" and not (tmp_path / "out" / "results.jsonl").exists()
    page = (tmp_path / "out" / "check.html").read_text()  # issue 83: every verdict writes its page, exit 2 too
    assert "PROBLEM WITH THE INPUT" in page and str(markupsafe.escape(message)) in page
    assert f"--out {tmp_path / 'out'}" in page  # made by: the command that makes it again


@pytest.mark.parametrize(
    "plant, message",
    [
        (
            lambda text: text.replace("obs=y)", 'obs=y)\n    numpyro.deterministic("last", X[N])'),
            "the NumPyro model fails on the data: IndexError: index 100 is out of bounds for axis 0 with size 100 "
            '(line 11 of {py}: numpyro.deterministic("last", X[N]))',
        ),
        (
            lambda text: text.replace("X @ beta", "X.T @ beta"),
            "the NumPyro model fails on the data: TypeError: dot_general requires contracting dimensions to have the same "
            'shape, got (100,) and (3,). (line 10 of {py}: numpyro.sample("y", dist.Poisson(jnp.exp(alpha + X.T @ '
            "beta)), obs=y))",
        ),
        (
            lambda text: text.replace(
                "def poisson_regression(N, K, X, y=None):", "def poisson_regression(N, K, X, y=None)"
            ),
            "poisson_regression.py does not import: SyntaxError: expected ':' (line 6 of {py}: def poisson_regression(N, "
            "K, X, y=None))",
        ),
        (  # Stan's 1-based indices kept on a parameter: JAX clamps beta[3] to beta[2], NumPy would raise
            lambda text: text.replace("X @ beta", "X @ beta[jnp.arange(K) + 1]"),
            "the NumPyro model indexes out of bounds on the data: out-of-bounds indexing for array of shape (3,): "
            "index 3 is out of bounds for axis 0 with size 3 (line 10 of {py}: "
            'numpyro.sample("y", dist.Poisson(jnp.exp(alpha + X @ beta[jnp.arange(K) + 1])), obs=y))',
        ),
    ],
    ids=["off-by-one index", "shape", "syntax", "off-by-one index of a parameter"],
)
def test_an_error_in_the_port_names_the_users_file_and_line(
    plant, message, pair, own_models, monkeypatch, tmp_path, capsys
):
    """Issue 42's item 4: the user reads their own file and line, not the laid-out copy's, in one line, exit 2."""
    stan, py, data = pair
    py.write_text(plant(py.read_text()))
    nothing_may_sample(monkeypatch)
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(py=py) in err, err
    assert str(tmp_path / "out") not in err  # no path into the copy


def test_a_stan_program_that_does_not_compile_is_named_by_the_users_file_and_line(
    pair, own_models, monkeypatch, tmp_path, capsys
):
    """Issue 64: stanc's message names the user's file and line, never the laid-out copy (which check named by the
    NumPyro file's stem), in one line, exit 2, before anything is laid out."""
    stan, py, data = pair
    stan.write_text(stan.read_text().replace("vector[K] beta;", "vector[K] beta"))
    nothing_may_sample(monkeypatch)
    out = tmp_path / "out"
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"poisson_regression.stan does not compile: Syntax error in '{stan}', line 10" in err, err
    assert str(out) not in err and not (out / "model").exists()


def test_data_keys_neither_model_uses_are_ignored_with_a_note(pair, own_models, tmp_path, capsys):
    """posteriordb's data files carry keys a program does not declare; CmdStan ignores them, and so does check,
    saying which, and leaves them out of the laid-out data both engines read."""
    stan, py, data = pair
    data.write_text(json.dumps({**json.loads(data.read_text()), "offset": [0.0] * 100, "source": "posteriordb"}))
    out = tmp_path / "out"
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(out), "--stop-after", "static"]) == 0
    assert (
        "note: ignored data key(s) offset, source: in neither poisson_regression.stan's data block nor "
        "poisson_regression()'s arguments (CmdStan ignores them too)"
    ) in capsys.readouterr().out
    laid_out = json.loads((out / "model" / "models" / "counts-poisson_regression.json").read_text())
    assert sorted(laid_out) == ["K", "N", "X", "y"]


def test_every_run_starts_with_the_static_checks(pair, own_models, monkeypatch, tmp_path, capsys):
    """`stanjax run --model-dir`: a folder whose NumPyro model names a site differently stops before any run."""
    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    jax_file = folder / "jax_models" / "poisson_regression.py"
    jax_file.write_text(jax_file.read_text().replace('"alpha"', '"intercept"'))
    monkeypatch.setattr("stanjax.runner.commands.run.run_jobs", lambda *a, **k: pytest.fail("ran"))
    out = tmp_path / "results"
    assert main(["run", "--model-dir", str(folder), "--size", "tiny", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and f"{EXAMPLE_ID}: NumPyro site 'intercept' is not a Stan parameter and Stan "
        "parameter 'alpha' (real) has no NumPyro site"
        in err
    )
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
def test_a_change_to_one_element_of_a_vector_is_named_by_its_element(pair, own_models, tmp_path, capsys):
    """beta[2]'s prior alone made tighter in the port (a factor on that element): the check names beta[2], not the
    whole vector."""
    stan, py, data = pair
    py.write_text(
        py.read_text().replace(
            "    with numpyro.plate", '    numpyro.factor("planted", -0.5 * beta[1] ** 2)\n    with numpyro.plate'
        )
    )
    out = tmp_path / "out"
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(out), "--stop-after", "density"]) == 1
    density_line = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("density"))
    assert "the difference moves with beta[2] (" in density_line and "not with alpha" in density_line, density_line
    assert "beta[1]" not in density_line and "beta (" not in density_line


@pytest.mark.stan
def test_the_users_code_never_runs_in_the_checks_own_process_before_the_runs(
    pair, own_models, monkeypatch, tmp_path, capsys
):
    """Issue 80's item 3: importing the NumPyro file, tracing it, evaluating log densities and building or sampling
    the Stan program happen in the stages' workers, where a --timeout, Ctrl-C or SIGTERM can end them; here they
    would raise."""
    from stanjax import jax_models
    from stanjax.runner.pairing import density

    def refuse(*args, **kwargs):
        raise AssertionError("the user's code ran in the check's own process")

    for module, name in [(jax_models, "load"), (static_checks, "check"), (density, "stan_model"), (density, "check")]:
        monkeypatch.setattr(module, name, refuse)
    stan, py, data = pair
    args = ["check", str(stan), str(py), "--data", str(data), "--out", str(tmp_path / "out"), "--stop-after", "density"]
    assert main(args) == 0, capsys.readouterr().err
    assert "log densities differ by one constant" in capsys.readouterr().out


FACTOR = '    numpyro.factor("planted", jnp.log({}))\n    with numpyro.plate'  # planted before the likelihood


@pytest.mark.stan
@pytest.mark.parametrize(
    "plant, named",
    [
        (  # a scale that overflows: exp(800) is inf in float64 (a NaN given as a number, the static stage refuses)
            lambda text: text.replace("dist.Normal(0.0, 1.0)", "dist.Normal(0.0, jnp.exp(800.0 + alpha))"),
            "-inf at every one of the 5 points of the density check (draws of a short Stan run): sample site 'beta' has "
            'log probability -inf at the first (line 8 of {py}: beta = numpyro.sample("beta", dist.Normal(0.0, '
            "jnp.exp(800.0 + alpha)).expand([K]).to_event(1)))",
        ),
        (
            lambda text: text.replace("    with numpyro.plate", FACTOR.format("-1.0")),
            "nan at every one of the 5 points of the density check (draws of a short Stan run): factor 'planted' has "
            'log probability nan at the first (line 9 of {py}: numpyro.factor("planted", jnp.log(-1.0)))',
        ),
    ],
    ids=["prior", "factor"],
)
def test_a_numpyro_log_density_nan_at_every_point_is_bad_input_naming_the_site(
    plant, named, pair, own_models, tmp_path, capsys
):
    """Issue 80's item 7: a log density NaN (or infinite) at every point of the density check is no offset that
    moves (it said "different posterior", the offset moving by nan) but the port's mistake: one line, exit 2, the
    site and the user's line."""
    stan, py, data = pair
    py.write_text(plant(py.read_text()))
    args = ["check", str(stan), str(py), "--data", str(data), "--out", str(tmp_path / "out"), "--stop-after", "density"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "stanjax check: error: counts-poisson_regression: the NumPyro log density is "
    ), err
    assert named.format(py=py) in err, err


def test_a_log_density_nan_at_some_points_only_keeps_the_density_verdict(pair, own_models, monkeypatch, tmp_path):
    """The other side of item 7: finite at one point of three, the offset is compared (and moves), so the verdict is
    "different posterior" as before; at none, bad input. Stan's side stood in for: nothing compiles."""
    from stanjax.runner.pairing import density, density_stage

    stan, py, data = pair
    py.write_text(py.read_text().replace("    with numpyro.plate", FACTOR.format("alpha - 0.5")))
    spec, _ = pair_files.lay_out_pair(stan, py, data, "counts-poisson_regression", tmp_path / "model")
    given = spec.data(pair_files.GIVEN, 1)
    points = [{"alpha": np.float64(alpha), "beta": np.zeros(3)} for alpha in (0.4, 0.45, 0.6)]

    def numpyro_only(spec, data, points):
        numpyro = [density.numpyro_side(spec, data, point)[0] for point in points]
        return density.DensityCheck([0.0] * len(points), numpyro, False, None)

    monkeypatch.setattr(density, "build", lambda spec: None)
    monkeypatch.setattr(density, "sampling_overhead_s", lambda *args: 0.0)
    monkeypatch.setattr(density, "posterior_points", lambda *args: points)
    monkeypatch.setattr(density, "check", numpyro_only)
    monkeypatch.setattr(density_stage, "suspect_parameters", lambda *args: ([("alpha", 1.0)], ["beta"]))
    found = density_stage.density_stage(spec, given, len(points), 1)
    assert (found.ok, found.verdict) == (False, check_verdicts.DIFFERENT)
    assert "the offset moves by nan" in found.line and "the difference moves with alpha" in found.line
    points[2] = {"alpha": np.float64(0.3), "beta": np.zeros(3)}
    with pytest.raises(models.UsageError, match=r"nan at every one of the 3 points .* factor 'planted' has log prob"):
        density_stage.density_stage(spec, given, len(points), 1)


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
    assert "SAME POSTERIOR" in (out / "check.html").read_text() and "SAME POSTERIOR: " in text
    assert "Stan mean" in text and "<th>NumPyro sd</th>" in (out / "check.html").read_text()


@pytest.mark.stan
@pytest.mark.slow
def test_a_model_folder_runs_end_to_end_through_run_model_dir(tmp_path):
    folder = tmp_path / "my_models"
    shutil.copytree(EXAMPLE, folder)
    out = tmp_path / "results"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stanjax.runner.commands.cli",
            "run",
            "--model-dir",
            str(folder),
            "--suite",
            "tiny",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((r["model_id"], r["engine"], r["status"]) for r in records) == [
        (EXAMPLE_ID, "numpyro", "ok"),
        (EXAMPLE_ID, "stan", "ok"),
    ]
    assert all(r["sizes"] == {"N": 100, "K": 3} for r in records)


AR1 = ROOT / "tests" / "fixtures" / "ar1"


@pytest.fixture
def ar1(tmp_path):
    """tests/fixtures/ar1's three files, copied: a faithful port with a flat prior (ImproperUniform), a wide prior
    (normal(0, 10000)) and y observed and its own covariate."""
    files = tuple(tmp_path / name for name in ("ar1.stan", "ar1.py", "ar1.json"))
    for copy in files:
        shutil.copyfile(AR1 / copy.name, copy)
    return files


def density_run(files, tmp_path, capsys) -> tuple[int, str]:
    stan, py, data = files
    code = main(
        ["check", str(stan), str(py), "--data", str(data), "--out", str(tmp_path / "out"), "--stop-after", "density"]
    )
    out = capsys.readouterr().out
    return code, next(line for line in out.splitlines() if line.lstrip().startswith("density"))


@pytest.mark.stan
@pytest.mark.parametrize("flat", ["beta", "beta and sigma"])
def test_flat_priors_and_an_observed_covariate_pass_the_density_check(flat, ar1, own_models, tmp_path, capsys):
    """Issue 42's items 1 and 2: posteriordb's arK as first ported (y both observed and a covariate), with a flat
    prior on the real slope, and on the positive scale too (its cauchy prior dropped from both files)."""
    stan, py, _ = ar1
    if flat == "beta and sigma":
        stan.write_text(stan.read_text().replace("  sigma ~ cauchy(0, 2.5);\n", ""))
        py.write_text(
            py.read_text().replace("dist.HalfCauchy(2.5)", "dist.ImproperUniform(dist.constraints.positive, (), ())")
        )
    code, line = density_run(ar1, tmp_path, capsys)
    assert code == 0 and " ok " in line and "log densities differ by one constant" in line, line


@pytest.mark.stan
def test_a_wide_prior_cannot_hide_a_different_prior(ar1, own_models, tmp_path, capsys):
    """Issue 42's item 3: sigma ~ cauchy(0, 2.5) in Stan, HalfNormal(1) in the port. At prior draws alpha's
    normal(0, 10000) made |log density| ~1e14 and a relative tolerance let this pass; at posterior draws it fails,
    naming sigma."""
    py = ar1[1]
    py.write_text(py.read_text().replace("dist.HalfCauchy(2.5)", "dist.HalfNormal(1.0)"))
    code, line = density_run(ar1, tmp_path, capsys)
    assert code == 1 and "FAIL" in line and "the difference moves with sigma (" in line, line
    assert "not with alpha, beta" in line and "DIFFERENT POSTERIOR" in (tmp_path / "out" / "check.html").read_text()


@pytest.mark.stan
def test_a_missing_jacobian_is_caught_naming_the_parameter(own_models, tmp_path, capsys):
    """Held from before: x declared in (0, 1 - a) with no prior is flat on that triangle in Stan; a port with
    Uniform(0, 1 - a) adds -log(1 - a), which moves with a."""
    stan, py, data = (tmp_path / name for name in ("triangle.stan", "triangle.py", "triangle.json"))
    stan.write_text(
        "data { int N; vector[N] y; }\nparameters { real<lower=0, upper=1> a; "
        "real<lower=0, upper=1 - a> x; }\nmodel { y ~ normal(x + a, 0.5); }\n"
    )
    py.write_text(
        "import numpyro\nimport numpyro.distributions as dist\n\n\ndef triangle(N, y):\n"
        "    a = numpyro.sample('a', dist.Uniform(0.0, 1.0))\n"
        "    x = numpyro.sample('x', dist.Uniform(0.0, 1.0 - a))\n"
        "    numpyro.sample('y', dist.Normal(x + a, 0.5).expand([N]), obs=y)\n"
    )
    data.write_text(json.dumps({"N": 3, "y": [0.6, 0.9, 0.7]}))
    code, line = density_run((stan, py, data), tmp_path, capsys)
    assert code == 1 and "the difference moves with a (" in line, line


def metrics(**values):
    from types import SimpleNamespace

    return SimpleNamespace(**values)


def a_run(engine, failed=(), means=None, sds=None, mcses=None, gates=None):
    means = means or {"mu": 1.0}
    return metrics(
        engine=engine,
        status="ok",
        failed_gates=list(failed),
        repeat=0,
        gates=gates or {},
        metrics=metrics(
            posterior_mean=means,
            posterior_sd=sds or {k: 1.0 for k in means},
            posterior_mcse=mcses or {k: 0.02 for k in means},
        ),
    )


def test_three_verdicts_tell_a_different_port_from_a_sampler_that_failed():
    """Issue 42's item 5: gates failed after the densities agreed are "sampling failed", with the advice per gate
    and the engines that failed it; runs that pass but disagree too; only all passed and agreeing is "same"."""
    agree, disagree = [{"passed": True}], [{"passed": False}]
    assert check_verdicts.run_verdict([a_run("stan"), a_run("numpyro")], agree) == (check_verdicts.SAME, [])
    outcome, advice = check_verdicts.run_verdict(
        [a_run("stan", ["divergences"]), a_run("numpyro", ["divergences", "rhat"])], disagree
    )
    assert outcome == check_verdicts.SAMPLING_FAILED and len(advice) == 2
    assert advice[0].startswith("NumPyro and Stan: divergent transitions") and "adapt_delta" in advice[0]
    assert "funnel" not in advice[0]  # a cause named only where its draws show it (the funnel test below)
    assert advice[1].startswith("NumPyro: R-hat above 1.01")
    assert check_verdicts.run_verdict([a_run("stan"), a_run("numpyro")], disagree) == (
        check_verdicts.SAMPLING_FAILED,
        [check_verdicts.DISAGREE],
    )
    crashed = metrics(engine="stan", status="timeout", failed_gates=[], repeat=0, gates={})
    assert check_verdicts.run_verdict([crashed, a_run("numpyro")], agree)[1] == [
        "Stan: a run did not finish: its log says why"
    ]
    stuck = a_run("numpyro", ["rhat"], gates={"rhat": {"passed": False, "chains": ["chain 2 is stuck: ..."]}})
    outcome, advice = check_verdicts.run_verdict([a_run("stan"), stuck], agree)
    assert advice[1:] == ["NumPyro run 1: chain 2 is stuck: ...", diagnose.ADVICE]
    assert check_verdicts.EXIT == {
        check_verdicts.SAME: 0,
        check_verdicts.DIFFERENT: 1,
        check_verdicts.SAMPLING_FAILED: 3,
    }


def test_an_engine_whose_runs_fail_rhat_alone_is_judged_on_their_chains_pooled(tmp_path):
    """Issue 83's radon_mn: one run in six at max R-hat 1.012 over 175 parameters is chance; the engine's runs'
    chains pooled decide its R-hat gate (each run's shown), and any other failed gate keeps the runs apart."""
    rng = np.random.default_rng(0)
    files = [tmp_path / f"{i}.npz" for i in range(3)]
    for i, file in enumerate(files):
        np.savez(file, **{"posterior/mu": rng.normal(size=(4, 1000)) + (5.0 if i == 2 else 0.0)})
    assert agreement.pooled_rhat(files[:2], ["mu"]) < 1.01 < agreement.pooled_rhat(files, ["mu"])

    def run(engine, failed=(), rhat=1.003):
        found = a_run(engine, failed)
        found.metrics.max_rhat, found.config = rhat, metrics(chains=4)
        return found

    runs = [run("stan"), run("stan", ["rhat"], 1.012), run("numpyro"), run("numpyro")]
    assert check_verdicts.pooling(runs) == ["stan"]
    assert check_verdicts.pooling([run("stan", ["rhat"]), run("stan", ["ess"]), *runs[2:]]) == []
    agree = [{"passed": True}]
    assert check_verdicts.run_verdict(runs, agree, pooled={"stan": 1.004}) == (check_verdicts.SAME, [])
    outcome, advice = check_verdicts.run_verdict(runs, agree, pooled={"stan": 1.02})
    assert outcome == check_verdicts.SAMPLING_FAILED and advice[0].startswith("Stan: R-hat above 1.01")
    (note,) = check_verdicts.pooled_notes(runs, {"stan": 1.004})
    assert note.startswith("Stan: max R-hat 1.003, 1.012 in its 2 runs of 4 chains, 1.004 over their 8 chains pooled")
    assert "the R-hat gate passes on the pooled draws" in note


@pytest.mark.stan
def test_a_check_stopped_in_its_runs_writes_its_page_without_a_verdict(pair, own_models, monkeypatch, tmp_path, capsys):
    """Issue 83: an interrupted check wrote no page; now it holds what finished (here: nothing) and says why."""

    def stopped(jobs, out, timeout_s, written, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_stage, "run_jobs", stopped)
    stan, py, data = pair
    out = tmp_path / "out"
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(out)]) == 130
    assert (
        capsys.readouterr().out.splitlines()[-1] == f"interrupted (SIGINT): 0 of 6 runs finished and recorded in {out}"
    )
    page = (out / "check.html").read_text()
    assert "STOPPED (SIGINT) after 0 of 6 runs: no verdict" in page and 'class="fail"' in page


def test_divergences_crowding_a_scales_small_values_are_named_as_a_funnel_and_scattered_ones_are_not(tmp_path):
    """Issue 83: the advice named a funnel whenever a run diverged; now only where the divergent draws sit at a
    positive parameter's small values (eight schools centred: tau near 0), naming it."""
    rng = np.random.default_rng(1)
    tau = np.exp(rng.normal(size=(4, 1000)))
    theta = rng.normal(size=(4, 1000, 3))
    crowded, scattered = tmp_path / "crowded.npz", tmp_path / "scattered.npz"
    draws = {"posterior/tau": tau, "posterior/theta": theta}
    np.savez(crowded, **draws, **{"sample_stats/diverging": tau < np.quantile(tau, 0.02)})
    np.savez(scattered, **draws, **{"sample_stats/diverging": rng.uniform(size=(4, 1000)) < 0.02})
    found = agreement.funnel([crowded], ["tau", "theta"])
    assert found["name"] == "tau" and found["divergent"] < found["overall"] / 3
    assert agreement.funnel([scattered], ["tau", "theta"]) is None
    advice = check_verdicts.run_verdict(
        [a_run("stan", ["divergences"])], [], seen={"divergences": check_verdicts.FUNNEL.format(**found)}
    )[1]
    assert advice[0].startswith("Stan: divergent transitions where tau is small (median ") and "non-centre" in advice[0]


def test_the_made_by_line_makes_the_check_again():
    """Issue 83: "Made by" named the data and seed only; now every option off its default, and the folder."""
    from stanjax.runner.commands import check as verb

    asked = pair_files.CheckRequest(
        ["m.stan", "m.py"],
        data=Path("d.json"),
        draws=2000,
        repeats=5,
        budget=30.0,
        engines=["stan", "numpyro", "nutpie_jax"],
    )
    assert verb.command(asked, Path("o")) == (
        "stanjax check m.stan m.py --data d.json --draws 2000 --repeats 5 --budget 30.0 --engines stan numpyro "
        "nutpie_jax --out o"
    )
    assert verb.command(pair_files.CheckRequest(["eight_schools"], size="small"), Path("o")) == (
        "stanjax check eight_schools --size small --out o"
    )


def test_runs_estimated_past_the_budget_are_refused_before_they_start_saying_what_fits(monkeypatch):
    """Issue 83's small network: every run hit the 600 s timeout after the density stage; now the short run's
    seconds an iteration predict the runs, and a request past --budget (or a run past --timeout) is refused."""
    monkeypatch.setattr(run_stage.os, "sched_getaffinity", lambda pid: {0, 1})
    asked = pair_files.CheckRequest(["m"])  # 4 chains on 2 cores: 2 rounds of 1500 iterations a run
    per_run = run_stage.run_seconds(asked, 0.01)
    assert per_run == pytest.approx(0.01 * 1500 * 2 + run_stage.START_S)
    run_stage.within_budget(asked, per_run, 0.01)  # 6 runs of 38 s: within 10 minutes
    with pytest.raises(models.UsageError, match=r"over --budget 10 min: --repeats 1 takes about 5\.3 min"):
        run_stage.within_budget(asked, run_stage.run_seconds(asked, 0.05), 0.05)
    with pytest.raises(models.UsageError, match=r"--repeats 1 --draws \d+00 fits it; or --budget \d+ to run"):
        run_stage.within_budget(asked, run_stage.run_seconds(asked, 0.15), 0.15)
    with pytest.raises(models.UsageError, match=r"past --timeout 600 s"):
        run_stage.within_budget(asked, run_stage.run_seconds(asked, 0.3), 0.3)


def test_runs_grow_their_draws_then_their_repeats_where_only_pooled_r_hat_is_undecided():
    """Issue 83's item 1: draws double to 4 x --draws; then, where R-hat alone failed on an engine's pooled runs,
    the repeats double (more chains pooled); a run's ESS or a failed gate more draws cannot decide stops it."""
    from types import SimpleNamespace

    asked = pair_files.CheckRequest(["m"], draws=1000, repeats=3)

    def runs(stan_failed: list[str], numpyro_failed: list[str] = ()) -> list:
        return [
            SimpleNamespace(engine=engine, status="ok", failed_gates=list(failed))
            for engine, failed in (("stan", stan_failed), ("numpyro", numpyro_failed))
            for _ in range(3)
        ]

    undecided = {"stan": 1.02}
    assert run_stage.next_round(asked, 1000, 3, runs(["rhat"]), undecided) == (2000, 3)
    assert run_stage.next_round(asked, 4000, 3, runs(["rhat"]), undecided) == (4000, 6)
    assert run_stage.next_round(asked, 4000, 6, runs(["rhat"]), undecided) is None  # at both caps
    assert run_stage.next_round(asked, 4000, 3, runs(["ess"]), {}) is None  # repeats raise no run's ESS
    assert run_stage.next_round(asked, 4000, 3, runs(["rhat"], ["ess"]), undecided) is None
    assert run_stage.next_round(asked, 4000, 3, runs(["rhat"]), {"stan": 1.005}) is None  # pooled, it passed
    assert run_stage.next_round(asked, 1000, 3, runs(["divergences"]), {}) is None  # more draws decide nothing
    note = run_stage.grown_note([1000, 2000, 4000], 6, asked)
    assert note.startswith("draws a chain grown 1,000 → 2,000 → 4,000, then repeats 3 → 6: "), note


def test_the_parameter_table_sets_both_sides_side_by_side_largest_z_first():
    """Issue 42's item 7: per parameter both engines' means and sds over their runs, z of the difference of the
    means over the combined MCSE of those means (two runs a side: MCSE sqrt(2 x 0.02^2) / 2)."""
    stan = [a_run("stan", means={"mu": 1.0, "tau": 2.0}), a_run("stan", means={"mu": 1.0, "tau": 2.2})]
    numpyro = [a_run("numpyro", means={"mu": 1.01, "tau": 2.0}), a_run("numpyro", means={"mu": 0.99, "tau": 2.0})]
    rows = agreement.parameter_rows(stan + numpyro)
    assert [row["parameter"] for row in rows] == ["tau", "mu"]
    assert rows[0]["stan"]["mean"] == pytest.approx(2.1) and rows[0]["numpyro"]["sd"] == 1.0
    assert rows[0]["z"] == pytest.approx(0.1 / 0.02) and rows[1]["z"] == pytest.approx(0.0)
    assert agreement.parameter_rows(stan) == []  # one side has no completed run: nothing to set beside it


def test_speed_advice_splits_the_gap_into_gradient_and_sampler_and_points_at_sampling_loops(tmp_path):
    """Issue 42's item 9: ESS/s = ESS per gradient / cost of a gradient, so the ratio is the product of the two
    ratios, and the larger one is named; a model-block loop of sampling statements is pointed at by its line (not a
    loop that only assigns, nor one in a comment or another block)."""
    program = tmp_path / "loops.stan"
    program.write_text(
        "data { int N; vector[N] y; }\nparameters { real mu; }\nmodel {\n"
        "  /* for (n in 1:N) y[n] ~ normal(mu, 1); */\n  vector[N] m;\n"
        "  for (n in 1:N) m[n] = mu;  // for (n in 1:N) y[n] ~ normal(m[n], 1);\n"
        "  for (n in 1:N)\n    for (k in 1:1) {\n      target += normal_lpdf(y[n] | m[n], 1);\n    }\n"
        "  mu ~ normal(0, 1);\n}\ngenerated quantities { for (n in 1:N) { real q = n; } }\n"
    )
    rows = [
        {"engine": "Stan", "ms_per_gradient": 0.4, "ess_per_1000_gradients": 100.0},
        {"engine": "NumPyro", "ms_per_gradient": 0.1, "ess_per_1000_gradients": 50.0},
    ]
    advice = speed_advice.speed_advice(rows, program, "my/loops.stan", Ratio(2.0, 1.5, 2.5, 3))
    assert "the speed ratio above is the median over paired repeats" in advice[0]
    unpaired = speed_advice.speed_advice(rows, program, "my/loops.stan", None)[0]  # issue 83: seeds, no ratio
    assert "no speed ratio was taken" in unpaired and "the speed ratio above" not in unpaired
    assert (
        advice[0].startswith(
            "where the gap comes from: 4 from the cost of a gradient (Stan 0.4 ms, NumPyro 0.1 ms) x 0.5 from the sampler"
        )
        and "the cost of a gradient makes most of the difference" in advice[0]
    )
    assert "NumPyro / Stan 2" not in advice[0]  # one speed ratio in the output: the paired one
    assert len(advice) == 2 and advice[1].startswith("my/loops.stan, line 7: a loop of sampling statements")
    assert speed_advice.sampling_loops((EXAMPLE / "stan" / "poisson_regression.stan").read_text()) == []


GARCH = ROOT / "tests" / "fixtures" / "garch11"  # posteriordb's data and reference draws (SOURCE.md), our programs


def test_posteriordb_reference_draws_summarise_as_posteriordb_does():
    """Issue 42's item 8: the reference draws of garch-garch11, summarised here, give posteriordb's own summary
    (its reference_posteriors/summary_statistics/mean_value/mean_value/garch-garch11.json at 28f8d3d: means and
    their MCSEs, quoted)."""
    from stanjax.runner.measure import references

    theirs = {
        "mu": (5.05001794660039, 0.00123500863504721),
        "alpha0": (1.47075973803898, 0.00568114335897224),
        "alpha1": (0.567284282813872, 0.00128025972217755),
        "beta1": (0.293024546082117, 0.00125411180836808),
    }
    ours = references.from_posteriordb(GARCH / "garch-garch11.json.zip", list(theirs))
    assert (ours["chains"], ours["draws"]) == (10, 1000)
    for name, (mean, mcse) in theirs.items():
        assert ours["parameters"][name]["mean"] == pytest.approx(mean, rel=1e-12)
        assert ours["parameters"][name]["mcse_mean"] == pytest.approx(mcse, rel=0.01)
        assert 0 < ours["parameters"][name]["mcse_sd"] < ours["parameters"][name]["sd"] / 50
    assert ours["other"] == []  # the file holds nothing else
    partial = references.from_posteriordb(GARCH / "garch-garch11.json.zip", ["mu", "alpha0", "gamma"])
    assert partial["without"] == ["gamma"] and partial["other"] == ["alpha1", "beta1"]  # both sides named


def test_a_reference_without_the_pairs_parameters_is_one_line_and_exit_2(
    ar1, own_models, monkeypatch, tmp_path, capsys
):
    stan, py, data = ar1
    nothing_may_sample(monkeypatch)
    reference = GARCH / "garch-garch11.json.zip"
    assert main(["check", str(stan), str(py), "--data", str(data), "--reference", str(reference)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"stanjax check: error: {reference} has no draws of alpha, beta, sigma (it has mu, alpha0, alpha1, beta1)\n"
    )  # a reference of another posterior
    (tmp_path / "not.json").write_text('{"mu": [1, 2]}')
    assert main(["check", str(stan), str(py), "--data", str(data), "--reference", str(tmp_path / "not.json")]) == 2
    assert "is not posteriordb reference draws: expected a list of chains" in capsys.readouterr().err


def test_a_reference_whose_draws_of_a_parameter_have_other_elements_is_refused_before_anything_runs(
    pair, own_models, monkeypatch, tmp_path, capsys
):
    """Issue 64: draws of another posterior that share a name with the model's (``beta[1..5]`` against a vector[3]
    ``beta``) were found only after the whole check, as a different posterior; now one line and exit 2. Draws that
    match, beside quantities of the file's own, pass the static stage with a note."""
    stan, py, data = pair
    nothing_may_sample(monkeypatch)

    def reference(*names):
        path = tmp_path / f"reference-{len(names)}.json"
        path.write_text(json.dumps([{name: [0.1 * i for i in range(10)] for name in names} for _ in range(2)]))
        return path

    other = reference("alpha", *(f"beta[{i}]" for i in range(1, 6)))
    args = ["check", str(stan), str(py), "--data", str(data), "--out", str(tmp_path / "out"), "--reference"]
    assert main([*args, str(other)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"stanjax check: error: {other}: its draws of beta (5 in the file, 3 in the model) have other elements than "
        "the model's parameters: the draws of another posterior\n"
    )
    assert main(["check", "covtype_synth-logistic_regression", "--reference", str(other)]) == 2
    assert capsys.readouterr().err == (
        "stanjax check: error: --reference goes with MODEL.stan MODEL.py; a posterior ID is checked against its own "
        "reference\n"
    )
    same = reference("alpha", "beta[1]", "beta[2]", "beta[3]", "sigma")
    assert main([*args, str(same), "--stop-after", "static"]) == 0
    assert "the reference's draws of sigma are of no parameter of the model: left out" in capsys.readouterr().out


def test_engines_that_agree_with_each_other_but_not_the_reference_are_a_different_posterior():
    """The two engines share a posterior that is not the reference's (a different model or data): the verdict is
    "different posterior", naming the farthest parameter; within the reference's MCSEs, "same"."""
    reference = {
        "source": "posteriordb reference draws x.json",
        "parameters": {"mu": {"mean": 1.0, "mcse_mean": 0.02, "sd": 1.0, "mcse_sd": 0.02}},
    }
    runs = [a_run("stan", means={"mu": 1.0}), a_run("numpyro", means={"mu": 1.01})]
    for run in runs:
        run.metrics.posterior_mcse_sd, run.metrics.posterior_khat = {"mu": 0.02}, {"mu": 0.0}
    assert check_verdicts.run_verdict(runs, [{"passed": True}], reference) == (check_verdicts.SAME, [])
    reference["parameters"]["mu"]["mean"] = 1.5
    outcome, advice = check_verdicts.run_verdict(runs, [{"passed": True}], reference)
    assert outcome == check_verdicts.DIFFERENT and advice[0].startswith(
        "the engines agree with each other, not with the reference (posteriordb reference draws x.json): Stan's mean "
        "of mu is 18 combined MCSEs from it (limit 5)"
    )
    # the runs' own gates judged them on the same reference: still the one verdict, not a sampling failure
    gated = [a_run(run.engine, failed=["reference"], means={"mu": 1.0}) for run in runs]
    for run in gated:
        run.metrics.posterior_mcse_sd, run.metrics.posterior_khat = {"mu": 0.02}, {"mu": 0.0}
    assert check_verdicts.run_verdict(gated, [{"passed": True}], reference)[0] == check_verdicts.DIFFERENT
    assert check_verdicts.run_verdict(gated, [{"passed": True}])[0] == check_verdicts.SAMPLING_FAILED


@pytest.mark.stan
def test_a_support_bounded_by_another_parameter_passes_density_and_is_said_to_be_unsamplable_by_numpyro(
    own_models, tmp_path, capsys
):
    """garch11: flat priors (ImproperUniform, four supports), beta1 in (0, 1 - alpha1). The density check compares
    them; NumPyro's MCMC would return wrong draws of beta1 (or fail on parallel chains), so no run is made and the
    verdict is "sampling failed", saying what to write instead."""
    out = tmp_path / "out"
    code = main(
        [
            "check",
            str(GARCH / "garch11_bounded.stan"),
            str(GARCH / "garch11_bounded.py"),
            "--data",
            str(GARCH / "garch.json"),
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 3 and "SAMPLING FAILED: " in text, text
    assert any(line.lstrip().startswith("density") and " ok " in line for line in text.splitlines()), text
    assert "run      FAIL  not run: NumPyro's MCMC cannot sample 'beta1' as written" in text
    assert "advice: NumPyro: 'beta1': a support whose bounds are computed from another parameter" in text
    assert not (out / "results.jsonl").exists()


@pytest.mark.stan
@pytest.mark.slow
def test_a_port_of_posteriordbs_garch11_is_the_same_posterior_as_its_reference(own_models, tmp_path, capsys):
    """Flat priors on every parameter, the whole check, and posteriordb's reference draws: both engines agree with
    each other and with the outside truth on the parameters it has draws of (beta1_share is the port's own)."""
    out = tmp_path / "out"
    code = main(
        [
            "check",
            str(GARCH / "garch11_share.stan"),
            str(GARCH / "garch11_share.py"),
            "--data",
            str(GARCH / "garch.json"),
            "--reference",
            str(GARCH / "garch-garch11.json.zip"),
            "--repeats",
            "1",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and "SAME POSTERIOR: " in text, text
    assert "note: the reference has no draws of beta1_share: not checked against it" in text
    page = (out / "check.html").read_text()
    assert "ref. mean" in text and "<th>reference mean</th>" in page and "--reference" in page  # made by, in full
    runs = read_records(out)  # the records say what the table says: gated on the reference given
    assert runs and all(r.gates["reference"]["checked"] and r.gates["reference"]["passed"] for r in runs)


TRUNCATED = ROOT / "tests" / "fixtures" / "truncated"  # a prior truncating a wider Stan bound (SOURCE.md)


@pytest.fixture
def truncated(tmp_path):
    """tests/fixtures/truncated's three files, copied: Stan's real<lower=-10, upper=20> beta under uniform(-10, 10),
    NumPyro's Uniform(-10, 10)."""
    files = tuple(tmp_path / name for name in ("truncated.stan", "truncated.py", "truncated.json"))
    for copy in files:
        shutil.copyfile(TRUNCATED / copy.name, copy)
    return files


def test_bounds_that_differ_are_a_note_for_the_density_stage(truncated, own_models, monkeypatch, tmp_path, capsys):
    """Issue 83's GLMM_Poisson: a Stan bound wider than its uniform prior's support is one posterior with the
    NumPyro port's Uniform, which only the densities can tell (a simplex against a real vector is a problem: the
    static test above)."""
    stan, py, data = truncated
    nothing_may_sample(monkeypatch)
    out = tmp_path / "out"
    assert main(["check", str(stan), str(py), "--data", str(data), "--out", str(out), "--stop-after", "static"]) == 0
    text = capsys.readouterr().out
    assert "note: 'beta': Stan declares real<lower=" in text, text
    assert "the NumPyro site's support is lower=-10, upper=10: one posterior only if each side's density" in text


@pytest.mark.stan
def test_a_stan_draw_outside_numpyros_support_is_a_different_posterior(truncated, own_models, tmp_path, capsys):
    """The planted fault: the port's Uniform(-10, 0.2) ends below the posterior's beta (about 0.8), so Stan's draws
    lie outside it: the density stage says so (NumPyro's Uniform log density is finite there, unchecked)."""
    py = truncated[1]
    py.write_text(py.read_text().replace("dist.Uniform(-10.0, 10.0)", "dist.Uniform(-10.0, 0.2)"))
    code, line = density_run(truncated, tmp_path, capsys)
    assert code == 1 and "FAIL" in line and "lie outside the NumPyro model's support (beta = " in line, line
    assert "(support lower=-10, upper=0.2)" in line, line


@pytest.mark.stan
@pytest.mark.slow
def test_a_prior_truncating_a_wider_stan_bound_is_the_same_posterior_at_the_defaults(
    truncated, own_models, tmp_path, capsys
):
    """Issue 83's acceptance for a GLMM-like truncated prior: the whole check at its defaults."""
    stan, py, data = truncated
    out = tmp_path / "out"
    code = main(["check", str(stan), str(py), "--data", str(data), "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "SAME POSTERIOR: " in text, text
    assert "note: 'beta': Stan declares real<lower=-10, upper=20>" in text
    assert "SAME POSTERIOR" in (out / "check.html").read_text()


@pytest.mark.stan
@pytest.mark.slow
def test_runs_too_short_to_decide_their_gates_grow_their_draws(truncated, own_models, tmp_path, capsys):
    """Issue 83's item 1: 100 draws a chain cannot give 400 effective draws; the runs double their draws until the
    gates are decided (at most 4 x --draws), the last round judged, every round recorded."""
    stan, py, data = truncated
    out = tmp_path / "out"
    code = main(["check", str(stan), str(py), "--data", str(data), "--draws", "100", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "note: draws a chain grown 100 → 200" in text, text
    rounds = sorted({r.config.draws for r in read_records(out)})
    assert rounds[:2] == [100, 200] and len(read_records(out)) == 6 * len(rounds)


RADON, NETWORK = (ROOT / "tests" / "fixtures" / name for name in ("radon_mn", "network"))  # SOURCE.md


def fixture_check(folder: Path, *options: str) -> list[str]:
    name = folder.name
    pair = [str(folder / f"{name}.stan"), str(folder / f"{name}.py"), "--data", str(folder / f"{name}.json")]
    return ["check", *pair, *options]


@pytest.mark.stan
@pytest.mark.slow
def test_radon_mns_non_centred_port_of_175_parameters_is_the_same_posterior_at_the_defaults(
    own_models, tmp_path, capsys
):
    """Issue 83's acceptance: a non-centred port on posteriordb's radon_mn data (919 houses, 85 counties) passes at
    the defaults, where one run in six at max R-hat 1.012 over its 175 parameters had failed it."""
    out = tmp_path / "out"
    code = main(fixture_check(RADON, "--out", str(out)))
    text = capsys.readouterr().out
    assert code == 0 and "SAME POSTERIOR: " in text, text


@pytest.mark.stan
def test_a_networks_check_past_its_budget_is_refused_before_its_runs_with_its_page(own_models, tmp_path, capsys):
    """Issue 83's small network: the density stage's note estimates the runs; past --budget the check says so
    before any run starts, exit 2, and writes its page."""
    out = tmp_path / "out"
    assert main(fixture_check(NETWORK, "--budget", "0.05", "--out", str(out))) == 2
    captured = capsys.readouterr()
    assert "note: the runs: about " in captured.out and "estimated from the short Stan run's" in captured.out
    assert "over --budget 0.05 min: not even --repeats 1 fits it; or --budget " in captured.err, captured.err
    assert not (out / "results.jsonl").exists() and "PROBLEM WITH THE INPUT" in (out / "check.html").read_text()


def test_the_speed_ratio_is_taken_within_paired_repeats_and_needs_five_for_an_interval():
    """Per repeat (a block of both engines back to back) NumPyro's ESS/s over Stan's; the median, and an interval
    only from 5 repeats on. A repeat with one engine's run invalid pairs with nothing."""
    from types import SimpleNamespace

    from stanjax.runner.commands.check import speed_text
    from stanjax.runner.pairing.agreement import speed_ratio

    def run(engine, block, ess_per_s, valid=True):
        return SimpleNamespace(
            engine=engine, status="ok", valid=valid, block_of=("c", block), metrics=SimpleNamespace(ess_per_s=ess_per_s)
        )

    runs = [run("stan", b, 100.0) for b in range(5)] + [run("numpyro", b, 100.0 * (b + 1)) for b in range(5)]
    ratio = speed_ratio(runs)
    assert (ratio.value, ratio.low, ratio.high, ratio.blocks) == (3.0, 1.0, 5.0, 5)
    assert "90 % interval 1 to 5 over 5 paired repeats" in speed_text(ratio)
    runs[0] = run("stan", 0, 100.0, valid=False)
    fewer = speed_ratio(runs)
    assert fewer.blocks == 4 and "too few for an interval (5 needed)" in speed_text(fewer)


def test_trees_near_the_depth_limit_get_a_note_per_engine_and_shallow_ones_none():
    """The check's run stage says where an engine's trees average half or more of the steps its depth allows
    (diamonds: 829 of 1,023 went unsaid)."""
    from msgspec.structs import replace

    from stanjax.runner.core import records

    runs = [r for r in records.read(ROOT / "tests" / "fixtures" / "tiny_repeats2.jsonl") if r.status == "ok"]
    assert runs and run_stage.depth_notes(runs) == []  # the fixture's trees are shallow
    deep = [replace(r, metrics=replace(r.metrics, mean_leapfrog_per_draw=829.0)) for r in runs if r.engine == "stan"]
    notes = run_stage.depth_notes([*runs, *deep])
    assert len(notes) == 1 and notes[0].startswith("httpstan-CPU: trees of 829 leapfrog steps a draw on average")
    assert "of at most 1,023 (max tree depth 10)" in notes[0]


def test_a_new_check_sets_the_earlier_ones_page_and_model_folder_aside(pair, own_models, tmp_path):
    """A check that fails (here on a static problem) replaces nothing an earlier check left: its page and model
    folder move to OUT/earlier/<time>/."""
    stan, py, data = pair
    out = tmp_path / "out"
    args = ["check", str(stan), str(py), "--data", str(data), "--out", str(out), "--stop-after", "static"]
    assert main(args) == 0
    page, port = (out / "check.html").read_text(), (out / "model" / "jax_models" / py.name).read_text()
    py.write_text(
        py.read_text().replace("dist.Normal(0.0, 1.0).expand([K]).to_event(1)", "dist.Dirichlet(jnp.ones(K))")
    )
    assert main(args) == 2  # beta a simplex: refused before anything runs
    [earlier] = (out / pair_files.EARLIER).iterdir()
    assert (earlier / "check.html").read_text() == page and (
        earlier / "model" / "jax_models" / py.name
    ).read_text() == port


def test_an_index_past_an_end_inside_a_library_is_not_the_ports():
    """diffrax indexes its saved times one past their end on purpose (JAX clamps): the Lotka-Volterra port is not
    refused for it; the same check names a port's own index (the parametrised cases above)."""
    from stanjax import jax_models

    spec = models.get("hudson_lynx_hare-lotka_volterra")
    assert static_checks.out_of_bounds(jax_models.load(spec.jax_file), spec.data("tiny", 1), spec.jax_file) is None


def test_check_engines_are_the_pair_and_nutpies_each_refused_in_one_line_before_anything_runs(
    monkeypatch, tmp_path, capsys
):
    """Issue 81, item 6: --engines takes the pair and nutpie's two; an unknown engine is named with the nearest, a
    list without the pair says both stay, nutpie_stan where no BridgeStan build is found says what builds one; all
    exit 2 before the static stage's worker starts."""

    def refuse(*args, **kwargs):
        raise AssertionError("a stage ran after a refused --engines")

    monkeypatch.setattr(check, "in_worker", refuse)
    monkeypatch.setattr(run_stage, "run_jobs", refuse)
    target = ["check", "eight_schools-eight_schools_noncentered", "--out", str(tmp_path / "out")]
    assert main([*target, "--engines", "stan", "numpyro", "nutpie_jaz"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "'nutpie_jaz'" in err and "did you mean 'nutpie_jax'" in err, err
    assert main([*target, "--engines", "nutpie_stan", "nutpie_jax"]) == 2
    err = capsys.readouterr().err
    assert "the check compares Stan and NumPyro, so both stay" in err and len(err.splitlines()) == 1
    monkeypatch.setattr(engine_registry, "find_bridgestan", lambda: None)
    assert main([*target, "--engines", "stan", "numpyro", "nutpie_stan"]) == 2
    err = capsys.readouterr().err
    assert "nutpie_stan: nutpie runs a Stan program through BridgeStan" in err and "bridgestan_from_httpstan.sh" in err
    assert not (tmp_path / "out").exists()


def timed_run(engine, block, ess_per_s, valid=True, failed=()):
    from types import SimpleNamespace

    return SimpleNamespace(
        engine=engine,
        status="ok",
        valid=valid,
        failed_gates=list(failed),
        block_of=("c", block),
        metrics=SimpleNamespace(ess_per_s=ess_per_s),
    )


def test_with_nutpie_on_both_programs_the_speed_advice_names_the_gradient_or_the_sampler():
    """Issue 81, item 6: per paired repeat, nutpie-Stan / Stan (a Stan user's alternative), nutpie-JAX / nutpie-Stan
    (the gradient, one sampler) and NumPyro / nutpie-JAX (the sampler, one gradient); the larger part named."""
    from stanjax.runner.pairing.speed_advice import nutpie_split

    def block(b, stan, numpyro, nutpie_stan, nutpie_jax):
        return [
            timed_run(e, b, v)
            for e, v in zip(pair_files.PAIR + ("nutpie_stan", "nutpie_jax"), (stan, numpyro, nutpie_stan, nutpie_jax))
        ]

    sampler_made_it = [r for b in range(5) for r in block(b, 100.0, 400.0, 150.0, 120.0)]
    lines = nutpie_split(sampler_made_it)
    assert lines[0] == "nutpie on your Stan program: nutpie-Stan / Stan ESS/s 1.5 (90 % interval 1.5 to 1.5)"
    assert "nutpie-JAX / nutpie-Stan ESS/s 0.8 (90 % interval" in lines[1] and "NumPyro / nutpie-JAX 3.33" in lines[1]
    assert ": the sampler makes most of the difference" in lines[1]
    gradient_made_it = [r for b in range(2) for r in block(b, 100.0, 400.0, 100.0, 350.0)]
    lines = nutpie_split(gradient_made_it)
    assert "3.5 (2 paired repeats)" in lines[1] and ": the gradient makes most of the difference" in lines[1]
    assert nutpie_split([r for r in gradient_made_it if r.engine in pair_files.PAIR]) == []
    alone = [r for r in gradient_made_it if r.engine != "nutpie_stan"]
    assert nutpie_split(alone) == [
        "the sampler alone (one gradient): NumPyro / nutpie-JAX ESS/s 1.14 (2 paired repeats)",
        "the gradient alone: not measured (nutpie_stan beside nutpie_jax measures it)",
    ]


def test_a_nutpie_run_that_fails_a_gate_is_advice_beside_the_pairs_verdict():
    """The verdict is whether Stan and NumPyro sample one posterior: nutpie's failed gates are a line beside it, its
    runs out of the engines' agreement and the Stan-NumPyro speed ratio."""
    runs = [
        timed_run("stan", 0, 100.0),
        timed_run("numpyro", 0, 200.0),
        timed_run("nutpie_stan", 0, 300.0, valid=False, failed=["divergences"]),
    ]
    notes = check_verdicts.nutpie_notes(runs)
    assert notes == [
        f"nutpie-Stan (beside the pair, not in the verdict): 1 of 1 runs failed divergences; "
        f"{check_verdicts.ADVICE['divergences']}"
    ]
    assert agreement.speed_ratio(runs).value == 2.0
    assert check_verdicts.nutpie_notes(runs[:2]) == []


@pytest.mark.stan
@pytest.mark.slow
@pytest.mark.skipif(
    engine_registry.find_bridgestan() is None,
    reason="no BridgeStan build (benchmarks/bridgestan_from_httpstan.sh; BRIDGESTAN)",
)
def test_a_check_with_nutpie_on_both_programs_runs_four_engines_and_splits_the_gap(tmp_path, capsys):
    out = tmp_path / "out"
    engines = ["stan", "numpyro", "nutpie_stan", "nutpie_jax"]
    code = main(
        ["check", "eight_schools-eight_schools_noncentered", "--repeats", "1", "--out", str(out), "--engines", *engines]
    )
    text = capsys.readouterr().out
    assert code == 0, text
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["engine"] for r in records) == sorted(engines)
    assert "nutpie on your Stan program: nutpie-Stan / Stan ESS/s" in text
    assert "with one sampler on both programs: the gradient as nutpie calls it" in text
    page = (out / "check.html").read_text()
    assert "<td>nutpie-JAX</td>" in page and "--engines stan numpyro nutpie_stan nutpie_jax" in page
