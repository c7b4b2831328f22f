"""The documentation: the site builds with --strict (links, pages, the API's docstrings), its generated pages
cover every verb and every model, and the README stays a front page (the detail lives on the site)."""

import subprocess
import sys

import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.commands.cli import build_parser


def test_the_readme_is_a_front_page():
    assert (ROOT / "README.md").stat().st_size <= 10_000


def test_what_is_compared_names_every_engine():
    from stanjax.runner.core.engine_registry import ENGINES

    page = (ROOT / "docs" / "compared.md").read_text()
    assert [name for name in ENGINES if f"`{name}`" not in page] == []


@pytest.mark.slow
def test_the_site_builds_strict_with_a_page_per_verb_and_per_model(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (tmp_path / "cli" / "index.html").read_text()
    verbs = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction").choices
    assert all(f"stanjax {verb}" in cli for verb in verbs)
    for model_id in models.registry():
        assert (tmp_path / "models" / model_id / "index.html").is_file(), model_id
    api = (tmp_path / "api" / "index.html").read_text()
    assert all(name in api for name in ("posterior", "sample", "compare", "check", "to_inference_data"))
