"""ruff's lint rules and formatter (configured in pyproject.toml) hold over the whole checkout; the library keeps
its layout: no module over 400 lines, every runner module in a layer's folder, imports only downward between the
layers (function-level ones included) and no import cycle; mypy finds no type error in it."""

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


def test_no_library_module_is_over_400_lines_and_every_runner_module_and_test_sits_in_a_layer():
    sizes = {p.relative_to(ROOT): len(p.read_text().splitlines()) for d in LIBRARY for p in (ROOT / d).rglob("*.py")}
    assert sizes and not {p: n for p, n in sizes.items() if n > MAX_LINES}
    assert [p.name for p in (ROOT / "runner").glob("*.py")] == ["__init__.py"]
    folders = {p.name for p in (ROOT / "runner").iterdir() if (p / "__init__.py").is_file()}
    assert folders == {name.rsplit(".", 1)[1] for level in LAYERS for name in level if name.startswith(RUNNER)}
    tests = {p.name for p in (ROOT / "tests").iterdir() if (p / "__init__.py").is_file()}
    assert tests == folders | {"reports", "models"}  # the tests mirror the layers


def package_folders() -> dict[str, Path]:
    """stanjax's subpackages and the checkout folders they are (the links in stanjax/)."""
    return {f"stanjax.{p.name}": p.resolve() for p in (ROOT / "stanjax").iterdir() if p.is_symlink()}


def test_the_checkout_is_the_package_and_pyproject_lists_every_package_of_it():
    """stanjax/ is its __init__.py and a relative link to each design-card folder (no path set at run time), and
    the wheel's package list holds every folder with an __init__.py under them (one left out would be missing
    from the wheel while the checkout still ran)."""
    import tomllib

    links = {p.name: os.readlink(p) for p in (ROOT / "stanjax").iterdir() if p.is_symlink()}
    assert links == {name: f"../{name}" for name in ("models", "jax_models", "runner", "reports", "stan", "references")}
    assert not [p for d in LIBRARY for p in (ROOT / d).rglob("*.py") if re.search(r"__path__\s*[.\[]", p.read_text())]
    found = {"stanjax", "stanjax.stan", "stanjax.references"} | {
        "stanjax." + ".".join(init.parent.relative_to(ROOT).parts)
        for name in links
        for init in (ROOT / name).rglob("__init__.py")
    }
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert listed == found


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
    for module in (ROOT / "stanjax").glob("*.py"):  # the API: __init__.py and the modules beside it
        (farm / "stanjax" / module.name).symlink_to(module)
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


# The layers, bottom first: a module imports from its own package and from the levels below, never from one beside
# or above it (reports sits under pairing and campaigns, which read its ratio statistics).
RUNNER = "stanjax.runner."
LAYERS = (
    ("stanjax.jax_models",),
    ("stanjax.models",),
    (RUNNER + "core",),
    (RUNNER + "engines",),
    (RUNNER + "measure",),
    ("stanjax.reports",),
    (RUNNER + "pairing", RUNNER + "campaigns"),
    (RUNNER + "commands",),
    ("stanjax",),
)


def layer_of(module: str) -> tuple[int, str]:
    """The level and the package of a library module (the longest layer name it falls under)."""
    found = [
        (level, name) for level, names in enumerate(LAYERS) for name in names if f"{module}.".startswith(f"{name}.")
    ]
    return max(found, key=lambda item: len(item[1]))


def import_graph() -> dict[str, set[str]]:
    """Each library module's imports of other stanjax modules, wherever they stand (in a function, under
    TYPE_CHECKING): parsed, not imported."""

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
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stanjax"):
                imported |= {
                    f"{node.module}.{a.name}" if is_module(f"{node.module}.{a.name}") else node.module
                    for a in node.names
                }
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names if a.name.startswith("stanjax.")}
        graph[module_of(path)] = imported - {module_of(path)}
    return graph


def layering_problems(graph: dict[str, set[str]]) -> list[str]:
    """Imports that point up or sideways between the layers, and import cycles."""
    found = []
    for module, imported in graph.items():
        level, package = layer_of(module)
        for dep in sorted(imported):
            dep_level, dep_package = layer_of(dep)
            if dep_package != package and dep_level >= level:
                found.append(f"{module} -> {dep}")
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


def test_imports_point_down_the_layers_and_never_in_a_cycle():
    graph = import_graph()
    assert "stanjax.runner.core.records" in graph and "stanjax.runner.commands.run" in graph
    assert layering_problems(graph) == []
    planted = {
        **graph,
        "stanjax.runner.measure.plan": graph["stanjax.runner.measure.plan"] | {"stanjax.runner.commands.run"},
    }
    planted["stanjax.runner.core.records"] = graph["stanjax.runner.core.records"] | {"stanjax.runner.measure.plan"}
    planted["stanjax.runner.campaigns.studies"] = graph["stanjax.runner.campaigns.studies"] | {
        "stanjax.runner.pairing.check"
    }
    problems = layering_problems(planted)
    assert "stanjax.runner.measure.plan -> stanjax.runner.commands.run" in problems
    assert "stanjax.runner.core.records -> stanjax.runner.measure.plan" in problems
    assert "stanjax.runner.campaigns.studies -> stanjax.runner.pairing.check" in problems  # beside, not below
    assert any(p.startswith("cycle: ") and "stanjax.runner.core.records" in p for p in problems)
