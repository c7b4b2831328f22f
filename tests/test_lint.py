"""ruff's lint rules and formatter (configured in pyproject.toml) hold over the whole checkout; the library keeps
its layout: no module over 400 lines, and every runner module named in the map of ``runner/__init__.py``."""

import re
import subprocess
import sys

import pytest

from stanjax.models import ROOT

LIBRARY = ("models", "jax_models", "runner", "reports", "stanjax")
MAX_LINES = 400


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_is_clean(command):
    done = subprocess.run([sys.executable, "-m", "ruff", *command, "."], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_no_library_module_is_over_400_lines_and_the_runner_map_names_each_module():
    sizes = {p.relative_to(ROOT): len(p.read_text().splitlines()) for d in LIBRARY for p in (ROOT / d).rglob("*.py")}
    assert sizes and not {p: n for p, n in sizes.items() if n > MAX_LINES}
    listed = set(re.findall(r"``(\w+)/?``", (ROOT / "runner" / "__init__.py").read_text()))
    modules = {p.stem for p in (ROOT / "runner").glob("*.py")} - {"__init__"}
    assert modules - listed == set() and {"engines", "commands"} <= listed
