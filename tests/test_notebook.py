"""The example notebook (examples/api.ipynb) runs top to bottom, as a notebook user would run it (nbmake)."""

import subprocess
import sys

import pytest

from stanjax.models import ROOT


@pytest.mark.slow
def test_the_example_notebook_runs():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbmake", "-p", "no:cacheprovider", "-q", "examples/api.ipynb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:]
