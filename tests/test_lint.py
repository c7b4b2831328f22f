"""ruff's lint rules and formatter (configured in pyproject.toml) hold over the whole checkout; the library keeps
its layout: no module over 400 lines, every runner module named in the map of ``runner/__init__.py``, no import
from the library into the command line and no import cycle; mypy finds no type error in it."""

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

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


def package_folders() -> dict[str, Path]:
    """stanjax's subpackages and the checkout folders they install from (pyproject's package-dir)."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: ROOT / folder for name, folder in setuptools["package-dir"].items() if name.count(".") == 1}


def mypy(farm: Path) -> subprocess.CompletedProcess:
    packages = [
        arg for name in package_folders() if name.endswith(("models", "runner", "reports")) for arg in ("-p", name)
    ]
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *packages],
        cwd=farm,
        capture_output=True,
        text=True,
        env={**os.environ, "MYPY_CACHE_DIR": str(ROOT / "out" / "mypy-cache")},
    )


@pytest.mark.slow
def test_the_library_type_checks(tmp_path):
    """mypy is clean on the library, laid out as it installs (a folder of links: stanjax/ with its subpackages
    inside); a type error planted in a module is seen."""
    farm = tmp_path / "clean"
    (farm / "stanjax").mkdir(parents=True)
    (farm / "stanjax" / "__init__.py").symlink_to(ROOT / "stanjax" / "__init__.py")
    for name, folder in package_folders().items():
        (farm / name.replace(".", "/")).symlink_to(folder)
    done = mypy(farm)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]

    planted = tmp_path / "planted"
    shutil.copytree(farm, planted, symlinks=True)
    (planted / "stanjax" / "reports").unlink()
    shutil.copytree(package_folders()["stanjax.reports"], planted / "stanjax" / "reports")
    stats = planted / "stanjax" / "reports" / "stats.py"
    stats.write_text(stats.read_text() + "\n\nPLANTED: int = 'not an int'\n")
    done = mypy(planted)
    assert done.returncode == 1 and "stanjax/reports/stats.py" in done.stdout


def import_graph() -> dict[str, set[str]]:
    """Each library module's module-level imports of other stanjax modules (parsed, not imported)."""

    def module_of(path: Path) -> str:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        return ".".join(parts if parts[0] == "stanjax" else ["stanjax", *parts])

    def is_module(name: str) -> bool:
        base = ROOT.joinpath(*name.split(".")[1:])
        return base.with_suffix(".py").exists() or (base / "__init__.py").exists()

    graph = {}
    for path in (p for d in LIBRARY for p in (ROOT / d).rglob("*.py")):
        imported = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stanjax"):
                imported |= {
                    f"{node.module}.{a.name}" if is_module(f"{node.module}.{a.name}") else node.module
                    for a in node.names
                }
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names if a.name.startswith("stanjax.")}
        graph[module_of(path)] = imported
    return graph


def layering_problems(graph: dict[str, set[str]]) -> list[str]:
    """Imports from the library into the command line (``runner.cli``, ``runner.commands``), and import cycles."""
    cli = ("stanjax.runner.cli", "stanjax.runner.commands")
    found = [f"{m} -> {d}" for m in graph if not m.startswith(cli) for d in graph[m] if d.startswith(cli)]
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph.get(module, ())):
            if state.get(dep) == 1:
                found.append("cycle: " + " -> ".join([*path[path.index(dep) :], dep]))
            elif dep in graph and not state.get(dep):
                visit(dep, [*path, dep])
        state[module] = 2

    for module in sorted(graph):
        if not state.get(module):
            visit(module, [module])
    return found


def test_the_library_never_imports_the_command_line_and_has_no_import_cycle():
    graph = import_graph()
    assert "stanjax.runner.records" in graph and "stanjax.runner.commands.run" in graph
    assert layering_problems(graph) == []
    planted = {**graph, "stanjax.runner.plan": graph["stanjax.runner.plan"] | {"stanjax.runner.commands.run"}}
    planted["stanjax.runner.records"] = graph["stanjax.runner.records"] | {"stanjax.runner.plan"}
    problems = layering_problems(planted)
    assert "stanjax.runner.plan -> stanjax.runner.commands.run" in problems
    assert any(p.startswith("cycle: ") and "stanjax.runner.records" in p for p in problems)
