"""`stanjax import` on a posteriordb-shaped checkout made here from the garch11 fixture (posteriordb's garch data
and reference draws, this repository's program): the pair's files laid out with their source named, the data less
undeclared entries and typed as declared, the reference draws summarised as the runs' outside truth, a NumPyro stub
with the data signature; bad input exits 2 with one line."""

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.commands.cli import main
from stanjax.runner.measure import references

GARCH = ROOT / "tests" / "fixtures" / "garch11"


@pytest.fixture
def checkout(tmp_path) -> Path:
    """posteriordb's layout, holding one posterior, garch-garch11."""
    db = tmp_path / "posteriordb" / "posterior_database"
    for folder in ("posteriors", "models/stan", "data/data", "reference_posteriors/draws/draws"):
        (db / folder).mkdir(parents=True)
    (db / "posteriors" / "garch-garch11.json").write_text(
        json.dumps(
            {
                "name": "garch-garch11",
                "model_name": "garch11",
                "data_name": "garch",
                "reference_posterior_name": "garch-garch11",
                "keywords": ["time series"],
            }
        )
    )
    shutil.copyfile(GARCH / "garch11.stan", db / "models" / "stan" / "garch11.stan")
    data = json.loads((GARCH / "garch.json").read_text()) | {"T": 200.0, "unused": [1, 2]}  # a whole-number real
    with zipfile.ZipFile(db / "data" / "data" / "garch.json.zip", "w") as archive:
        archive.writestr("garch.json", json.dumps(data))
    shutil.copyfile(
        GARCH / "garch-garch11.json.zip", db / "reference_posteriors" / "draws" / "draws" / "garch-garch11.json.zip"
    )
    return db.parent


@pytest.fixture
def into(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(models.MODEL_DIRS_ENV, "")
    models.registry.cache_clear()
    yield tmp_path / "mine"
    models.registry.cache_clear()


def test_a_posterior_is_laid_out_as_a_pair_with_an_outside_truth(checkout, into, capsys):
    assert main(["import", "garch-garch11x", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert not into.exists()  # a wrong name creates no folder
    assert main(["import", "garch-garch11", "--posteriordb", str(checkout), "--into", str(into)]) == 0  # created
    out = capsys.readouterr().out
    assert "import: next, write the NumPyro model in" in out and "stanjax check garch-garch11" in out
    program = (into / "stan" / "garch11.stan").read_text()
    assert program.startswith("// posteriordb's program garch11, unchanged: stan-dev/posteriordb at ")
    assert program.endswith((GARCH / "garch11.stan").read_text())
    carried = json.loads((into / "models" / "posteriordb" / "garch.json").read_text())
    assert carried["left_out"] == ["unused"] and carried["source"].endswith(
        "posterior_database/data/data/garch.json.zip"
    )
    assert carried["data"]["T"] == 200 and isinstance(carried["data"]["T"], int)
    assert "garch-garch11" in (into / "models" / "posteriordb" / "SOURCE.md").read_text()
    stub = (into / "jax_models" / "garch11.py").read_text()
    assert "def garch11(T, y, sigma1):" in stub and "raise NotImplementedError" in stub
    assert "alpha1 (real<lower=0, upper=1>)" in stub

    models.add_model_dir(into)
    spec = models.get("garch-garch11")
    assert [(p.name, p.shape) for p in spec.parameters] == [("mu", ()), ("alpha0", ()), ("alpha1", ()), ("beta1", ())]
    assert 'parameters=(Parameter("mu"), Parameter("alpha0"),' in (into / "models" / "garch-garch11.py").read_text()
    data = spec.data("default", seed=1)
    assert data["y"].dtype == np.float64 and data["T"] == 200 and "unused" not in data
    assert spec.data("tiny", seed=7).keys() == data.keys()  # fixed data: every preset, any seed
    reference, source = references.applicable(spec.id, "tiny", (), models.data_hash(data))
    assert source.startswith("outside truth: posteriordb reference draws (") and "10 chains of 1000 draws" in source
    assert set(reference["parameters"]) == {"mu", "alpha0", "alpha1", "beta1"}
    assert reference["parameters"]["alpha1"]["mcse_sd"] > 0


def test_importing_twice_or_an_unknown_posterior_exits_2_with_one_line(checkout, into, capsys):
    into.mkdir()
    assert main(["import", "garch-garch11", "--posteriordb", str(checkout), "--into", str(into)]) == 0
    capsys.readouterr()
    assert main(["import", "garch-garch11", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["import", "garch-garch12", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert "has no posterior 'garch-garch12' (nearest: garch-garch11)" in capsys.readouterr().err
    assert main(["import", "garch-garch11", "--posteriordb", str(into), "--into", str(into)]) == 2
    assert "is not a posteriordb checkout" in capsys.readouterr().err
    a_file = into / "models" / "garch-garch11.py"
    assert main(["import", "garch-garch11", "--posteriordb", str(checkout), "--into", str(a_file)]) == 2
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
    for spec in carried:
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
