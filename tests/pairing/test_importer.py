"""`stanjax import` on a posteriordb-shaped checkout made here from the garch11 fixture (posteriordb's garch data
and reference draws, this repository's program): the pair's files laid out with their source named, the data less
undeclared entries and typed as declared, the reference draws summarised as the runs' outside truth, a NumPyro stub
with the data signature; bad input exits 2 with one line."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.commands.cli import main
from stanjax.runner.measure import references

GARCH = ROOT / "tests" / "fixtures" / "garch11"


@pytest.fixture
def into(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(models.MODEL_DIRS_ENV, "")
    models.registry.cache_clear()
    yield tmp_path / "mine"
    models.registry.cache_clear()


def test_a_posterior_is_laid_out_as_a_pair_with_an_outside_truth(checkout, into, capsys):
    assert main(["import", "garch-garch11tx", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert not into.exists()  # a wrong name creates no folder
    assert main(["import", "garch-garch11t", "--posteriordb", str(checkout), "--into", str(into)]) == 0  # created
    out = capsys.readouterr().out
    assert "import: next, write the NumPyro model in" in out and "stanjax check garch-garch11t" in out
    program = (into / "stan" / "garch11t.stan").read_text()
    assert program.startswith("// posteriordb's program garch11t, unchanged: stan-dev/posteriordb at ")
    assert program.endswith((GARCH / "garch11_bounded.stan").read_text())
    carried = json.loads((into / "models" / "posteriordb" / "garch.json").read_text())
    assert carried["left_out"] == ["unused"] and carried["source"].endswith(
        "posterior_database/data/data/garch.json.zip"
    )
    assert carried["data"]["T"] == 200 and isinstance(carried["data"]["T"], int)
    assert "garch-garch11t" in (into / "models" / "posteriordb" / "SOURCE.md").read_text()
    stub = (into / "jax_models" / "garch11t.py").read_text()
    assert "def garch11t(T, y, sigma1):" in stub and "raise NotImplementedError" in stub
    assert "alpha1 (real<lower=0, upper=1>)" in stub

    models.add_model_dir(into)
    spec = models.get("garch-garch11t")
    assert [(p.name, p.shape) for p in spec.parameters] == [("mu", ()), ("alpha0", ()), ("alpha1", ()), ("beta1", ())]
    assert 'parameters=(Parameter("mu"), Parameter("alpha0"),' in (into / "models" / "garch-garch11t.py").read_text()
    data = spec.data("default", seed=1)
    assert data["y"].dtype == np.float64 and data["T"] == 200 and "unused" not in data
    assert spec.data("tiny", seed=7).keys() == data.keys()  # fixed data: every preset, any seed
    reference, source = references.applicable(spec.id, "tiny", (), models.data_hash(data))
    assert source.startswith("outside truth: posteriordb reference draws (") and "10 chains of 1000 draws" in source
    assert set(reference["parameters"]) == {"mu", "alpha0", "alpha1", "beta1"}
    assert reference["parameters"]["alpha1"]["mcse_sd"] > 0


def test_importing_twice_or_an_unknown_posterior_exits_2_with_one_line(checkout, into, capsys):
    into.mkdir()
    assert main(["import", "garch-garch11t", "--posteriordb", str(checkout), "--into", str(into)]) == 0
    capsys.readouterr()
    assert main(["import", "garch-garch11t", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["import", "garch-garch12t", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert "has no posterior 'garch-garch12t' (nearest: garch-garch11t)" in capsys.readouterr().err
    assert main(["import", "garch-garch11t", "--posteriordb", str(into), "--into", str(into)]) == 2
    assert "is not a posteriordb checkout" in capsys.readouterr().err
    a_file = into / "models" / "garch-garch11t.py"
    assert main(["import", "garch-garch11t", "--posteriordb", str(checkout), "--into", str(a_file)]) == 2
    assert f"--into {a_file} is a file, not a folder" in capsys.readouterr().err


def test_the_repositorys_posteriordb_models_name_their_source_and_truth():
    """Every model laid out by the import: its program's header and SOURCE.md name posteriordb; a reference, where
    carried, is an outside truth for the model's data at every preset."""
    carried = [
        spec
        for spec in models.registry().values()
        if spec.home is None and (models.MODELS_DIR / f"{spec.id}.py").read_text().count("posteriordb.fixed_data")
    ]
    assert {spec.id for spec in carried} >= {
        "arma-arma11",
        "dogs-dogs",
        "low_dim_gauss_mix-low_dim_gauss_mix",
        "sblrc-blr",
        "gp_pois_regr-gp_pois_regr",
        "hmm_example-hmm_example",
        "hudson_lynx_hare-lotka_volterra",
    }
    listed = (models.MODELS_DIR / "posteriordb" / "SOURCE.md").read_text()
    page = (ROOT / "docs" / "posteriordb.md").read_text()  # the docs' list of posteriordb's posteriors in the zoo
    for spec in carried:
        assert f"`{spec.id}`" in page, spec.id
        header = spec.stan_file.read_text().splitlines()[0]
        assert header.startswith(f"// posteriordb's program {spec.model_name}")
        spec_text = (models.MODELS_DIR / f"{spec.id}.py").read_text()
        if "rewritten" in header:  # today's form of the program: the rewrite said in the program and the spec
            assert "The rewrite:" in spec.stan_file.read_text() and "The rewrite:" in spec_text
        elif "unchanged" not in header:  # a change needed to sample at all: said in the program and the spec
            assert "one change" in spec.stan_file.read_text() and "The change:" in spec_text
        assert f"`{spec.id}`" in listed
        for size in models.SIZE_NAMES:
            _, source = references.applicable(spec.id, size, (), models.data_hash(spec.data(size, 1)))
            published = spec.ground_truth is not None and spec.ground_truth(size) is not None
            assert source.startswith("outside truth: posteriordb") == published, (size, source)


MU_ONLY = """data {
  int<lower=2> T;
  vector[T] y;
}
transformed data {
  int T_lagged = T - 1;
}
parameters {
  real mu;
  real<lower=0> s;
  vector[T_lagged] e;
}
model {
  y ~ normal(mu, s);
  e ~ std_normal();
}
"""


def add_posterior(checkout: Path, name: str, model: str, data: str, program: str | None = None) -> None:
    """One more posterior in the fixture checkout, without reference draws; ``program``: its Stan program, where
    the checkout lacks it."""
    db = checkout / "posterior_database"
    info = {"name": name, "model_name": model, "data_name": data, "reference_posterior_name": None}
    (db / "posteriors" / f"{name}.json").write_text(json.dumps(info))
    if program is not None:
        (db / "models" / "stan" / f"{model}.stan").write_text(program)


def test_one_program_over_data_sets_and_one_data_set_under_programs(checkout, into, capsys):
    """posteriordb's nes1972-nes ... nes2000-nes share a program, earnings-* a data set whose entries each program
    declares in part: the program and its port laid out once; the data set carried once with every declared entry,
    each spec reading its own; a size the transformed data define written in data-block names."""
    add_posterior(checkout, "garch_again-garch11t", "garch11t", "garch_again")
    shutil.copyfile(
        checkout / "posterior_database" / "data" / "data" / "garch.json.zip",
        checkout / "posterior_database" / "data" / "data" / "garch_again.json.zip",
    )
    add_posterior(checkout, "garch-mu_only", "mu_only", "garch", MU_ONLY)
    for name in ("garch-mu_only", "garch-garch11t", "garch_again-garch11t"):
        assert main(["import", name, "--posteriordb", str(checkout), "--into", str(into)]) == 0, name
    capsys.readouterr()
    program = (into / "stan" / "garch11t.stan").read_text()
    assert (
        program.endswith((GARCH / "garch11_bounded.stan").read_text())
        and program.count("unchanged: stan-dev/posteriordb") == 1
    )
    carried = json.loads((into / "models" / "posteriordb" / "garch.json").read_text())
    assert set(carried["data"]) == {"T", "y", "sigma1"} and carried["left_out"] == ["unused"]

    models.add_model_dir(into)
    assert models.get("garch-mu_only").data("tiny", seed=1).keys() == {"T", "y"}
    assert models.get("garch-garch11t").data("tiny", seed=1).keys() == {"T", "y", "sigma1"}
    assert models.get("garch_again-garch11t").data("tiny", seed=1).keys() == {"T", "y", "sigma1"}
    lagged = models.get("garch-mu_only").parameters[2]
    assert lagged.shape == ("T - 1",) and lagged.resolve_shape({"T": 200}) == (199,)

    # a program of the same name that is not the one laid out is still refused
    (into / "stan" / "garch11t.stan").write_text(program.replace("y ~ normal", "y ~ student_t(4, "))
    add_posterior(checkout, "garch_third-garch11t", "garch11t", "garch_again")
    assert main(["import", "garch_third-garch11t", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert "the model name 'garch11t' is taken" in capsys.readouterr().err
