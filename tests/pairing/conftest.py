"""The pairing tests' posteriordb: a checkout of posteriordb's layout made here from the garch11 fixture."""

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from stanjax.models import ROOT

GARCH = ROOT / "tests" / "fixtures" / "garch11"


@pytest.fixture
def checkout(tmp_path) -> Path:
    """posteriordb's layout, holding one posterior, garch-garch11t."""
    db = tmp_path / "posteriordb" / "posterior_database"
    for folder in ("posteriors", "models/stan", "data/data", "reference_posteriors/draws/draws"):
        (db / folder).mkdir(parents=True)
    (db / "posteriors" / "garch-garch11t.json").write_text(
        json.dumps(
            {
                "name": "garch-garch11t",
                "model_name": "garch11t",
                "data_name": "garch",
                "reference_posterior_name": "garch-garch11t",
                "keywords": ["time series"],
            }
        )
    )
    shutil.copyfile(GARCH / "garch11_bounded.stan", db / "models" / "stan" / "garch11t.stan")
    data = json.loads((GARCH / "garch.json").read_text()) | {"T": 200.0, "unused": [1, 2]}  # a whole-number real
    with zipfile.ZipFile(db / "data" / "data" / "garch.json.zip", "w") as archive:
        archive.writestr("garch.json", json.dumps(data))
    shutil.copyfile(
        GARCH / "garch-garch11.json.zip", db / "reference_posteriors" / "draws" / "draws" / "garch-garch11t.json.zip"
    )
    return db.parent
