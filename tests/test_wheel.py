"""The built wheel, as a new user gets it: one top-level package, everything a run needs inside it, and the API
and CLI working from another directory in a fresh environment that has never seen the checkout."""

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from stanjax.models import ROOT

API_EXAMPLE = """
import stanjax as sj
p = sj.posterior("eight_schools-eight_schools_noncentered")
assert "/site-packages/stanjax/" in str(p.stan_file), p.stan_file
run = sj.sample(p, engine="numpyro", size="tiny", chains=2, warmup=150, draws=150, out="results")
print("draws", run.to_inference_data()["posterior"]["theta_tilde"].shape)
print("reference", p.reference("tiny")["header"]["model_id"])
print("rows", len(sj.load("results")))
print("report", sj.report("results", out="report").name)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # uv, as `make install` installs it (the venv has no pip), with the lock's setuptools as the build backend
    subprocess.run(
        [
            Path(sys.executable).parent / "uv",
            "build",
            "--quiet",
            "--wheel",
            "--no-build-isolation",
            "--python",
            sys.executable,
            "--out-dir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [found] = out.glob("stanjax-*.whl")
    return found


def test_the_wheel_holds_one_package_with_the_programs_references_and_templates(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "stanjax",
        next(n for n in names if ".dist-info/" in n).split("/")[0],
    }
    for needed in (
        "stanjax/runner/commands/run.py",
        "stanjax/runner/measure/worker.py",
        "stanjax/stan/eight_schools_noncentered.stan",
        "stanjax/stan/threaded/logistic_regression.stan",
        "stanjax/models/posteriordb/SOURCE.md",
        "stanjax/references/eight_schools-eight_schools_noncentered.tiny.json",
        "stanjax/reports/templates/report.html",
        "stanjax/jax_models/eight_schools_noncentered.py",
    ):
        assert needed in names, needed
    assert not any(name.startswith(("stanjax/tests/", "stanjax/results/")) for name in names)


@pytest.mark.slow
def test_the_installed_wheel_runs_the_api_and_the_cli_outside_the_checkout(wheel, tmp_path):
    """A fresh venv: this environment's dependencies on its path (not its editable stanjax), the wheel installed
    into it; then the README's API example and `stanjax run` from a folder far from the checkout."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(
        subprocess.run(
            [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")  # its .pth files are not run
    with zipfile.ZipFile(wheel) as archive:  # a pure wheel installs by unpacking
        archive.extractall(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "STANJAX_RERUNS": "0",
    }
    env.pop("STANJAX_CACHE", None)
    done = subprocess.run(
        [venv / "bin" / "python", "-c", API_EXAMPLE], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "draws (2, 150, 8)" in done.stdout and "rows 1" in done.stdout and "report index.html" in done.stdout
    assert "reference eight_schools-eight_schools_noncentered" in done.stdout
    assert (tmp_path / "cache" / "stanjax").is_dir()  # the user's cache folder, not the installed package's
    cli = subprocess.run(
        [
            venv / "bin" / "python",
            "-m",
            "stanjax.runner.commands.cli",
            "run",
            "--suite",
            "tiny",
            "--models",
            "eight_schools-eight_schools_noncentered",
            "--engines",
            "numpyro",
            "--out",
            "cli",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
    assert (work / "cli" / "results.jsonl").read_text().count("\n") == 1  # the tiny suite: one repeat
