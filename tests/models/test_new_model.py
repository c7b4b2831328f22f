"""A new model needs no test written and breaks none: in a copy of the checkout, a throwaway model whose id sorts
before every other joins the zoo, and the tests that read the registry (spec files, command-line choices, plans'
shards, estimates, the density check) pass with it, the throwaway's own density check among them. Its programs are
the eight schools' under another name, so httpstan finds the Stan program compiled already."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from stanjax import models
from stanjax.models import ROOT

SOURCE_ID = "eight_schools-eight_schools_noncentered"
THROWAWAY = "aaa-eight_schools_copy"  # sorts before every id of the zoo (fixed data: no seeded generator)


@pytest.mark.slow
@pytest.mark.stan
def test_a_model_that_sorts_first_breaks_no_test(tmp_path):
    assert sorted([*models.registry(), THROWAWAY])[0] == THROWAWAY
    copy = tmp_path / "checkout"
    for folder in ("stanjax", "models", "stan", "jax_models", "runner", "reports", "references", "results", "tests"):
        shutil.copytree(ROOT / folder, copy / folder, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "pyproject.toml", copy / "pyproject.toml")
    source = models.get(SOURCE_ID)
    name = THROWAWAY.split("-", 1)[1]
    (copy / "models" / f"{THROWAWAY}.py").write_text(
        (models.MODELS_DIR / f"{SOURCE_ID}.py").read_text().replace(f'"{SOURCE_ID}"', f'"{THROWAWAY}"')
    )
    shutil.copyfile(source.stan_file, copy / "stan" / f"{name}.stan")
    (copy / "jax_models" / f"{name}.py").write_text(
        re.sub(rf"\bdef {source.model_name}\(", f"def {name}(", source.jax_file.read_text())
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-v",
            "-p",
            "no:cacheprovider",
            "tests/models/test_models.py",
            "tests/commands/test_cli.py",
            "tests/pairing/test_density.py",
            "-k",  # test_cli's tests that read the registry: the model choices, the shards of a plan, an estimate
            f"test_models.py or bad_run_input or shards or estimate or {THROWAWAY}",
        ],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(copy)},
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert (
        f"test_density.py::test_stan_and_numpyro_log_densities_differ_by_a_constant[{THROWAWAY}] PASSED" in done.stdout
    )
    assert f"test_models.py::test_files_exist_for_every_id[{THROWAWAY}] PASSED" in done.stdout
    assert "test_cli.py::test_bad_run_input_exits_2_with_one_line" in done.stdout
