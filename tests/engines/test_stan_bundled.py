"""The bundled Stan's own chain driver over httpstan's compiled NUTS: the same seed gives pystan's draws for every
model, the flat columns are regrouped in Stan's column-major order, and Stan's errors reach the caller.

The driver forks a process per chain, and a process that has loaded JAX must not fork: the driver refuses to, the
worker that runs a Stan job never loads JAX, and the tests here sample (ours and pystan's) in a fresh child
process that never imports JAX (``tests/stan_child.py``), so pytest itself never forks with JAX loaded."""

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.core.config import RunConfig
from stanjax.runner.engines.stan_bundled import chain_output
from stanjax.runner.engines.stan_output import DRAWS_HEADER, group_columns, sample_table
from stanjax.runner.measure.jobs import WORKER_PYTHON
from tests import stan_child

CONFIG = RunConfig(size="tiny", chains=2, warmup=150, draws=100)
SEED = 12345
EIGHT_SCHOOLS = "eight_schools-eight_schools_noncentered"


def one_model_per_parameter_layout() -> list[str]:
    """The first model (by id) of each set of parameter ranks (scalars; vectors; matrices; ...): what the draws'
    regrouping from Stan's flat columns depends on. Every model's draws are compared across engines in the tiny
    end-to-end campaign; this compares our driver (the draws writer's doubles) with pystan's (httpstan's writer's
    JSON from the same module), draw for draw."""
    layouts: dict[tuple, str] = {}
    for model_id in sorted(models.registry()):
        ranks = tuple(sorted({len(p.shape) for p in models.get(model_id).summarised}))
        layouts.setdefault(ranks, model_id)
    return sorted(layouts.values())


@pytest.mark.slow
@pytest.mark.stan
@pytest.mark.parametrize("model_id", one_model_per_parameter_layout())
def test_same_seed_gives_pystans_draws(model_id):
    spec = models.get(model_id)
    data = spec.data(CONFIG.size, CONFIG.data_seed())
    child = stan_child.sample(model_id, data, CONFIG, SEED, with_pystan=True)
    assert child.error is None, child.error
    assert not child.jaxlib_imported
    ours, fit = child.ours, child.pystan

    def by_chain(name, shape):  # pystan: (*shape, draws * chains), chain index fastest
        return np.moveaxis(fit[name].reshape(*shape, -1, CONFIG.chains), (-2, -1), (1, 0))

    assert set(ours.draws) == set(fit.param_names)
    for name, shape in zip(fit.param_names, fit.dims):
        np.testing.assert_array_equal(ours.draws[name], by_chain(name, shape), err_msg=name)
    np.testing.assert_array_equal(ours.stats.n_leapfrog, by_chain("n_leapfrog__", []))
    assert ours.info["stan_interface"] == "httpstan"
    assert len(ours.timings.detail["chain_warmup_s"]) == CONFIG.chains


def test_flat_columns_are_regrouped_column_major():
    # Stan writes matrix z[2,3] as z.1.1, z.2.1, z.1.2, ...; value 10*i + j marks z[i,j].
    z_columns = [f"z.{i}.{j}" for j in (1, 2, 3) for i in (1, 2)]
    columns = ["lp__", "n_leapfrog__", "mu", *z_columns, "v.1", "v.2"]
    row = [-1.0, 3.0, 0.5, *(10 * int(c.split(".")[1]) + int(c.split(".")[2]) for c in z_columns), 7.0, 8.0]
    values = np.array([[row, row], [row, row]])  # (chains, draws, columns)
    draws = group_columns(columns, values)
    assert set(draws) == {"mu", "z", "v"}
    assert draws["mu"].shape == (2, 2) and draws["v"].shape == (2, 2, 2)
    np.testing.assert_array_equal(draws["z"][0, 0], [[11, 12, 13], [21, 22, 23]])
    np.testing.assert_array_equal(draws["v"][1, 1], [7, 8])


def test_the_draws_writers_doubles_are_read_as_sent_with_nan_and_count_checked():
    sent = DRAWS_HEADER + b"lp__\ty\n" + np.array([[-1.5, np.nan], [-2.5, 3.0]]).tobytes()
    columns, table = sample_table(sent, draws=2)
    assert columns == ["lp__", "y"]
    assert table[0, 0] == -1.5 and np.isnan(table[0, 1]) and table[1, 1] == 3.0
    with pytest.raises(RuntimeError, match="2 draws, expected 3"):
        sample_table(sent, draws=3)
    with pytest.raises(RuntimeError, match="no draws"):
        sample_table(b"", draws=2)  # a chain that failed before its first draw


def test_a_chains_connections_are_told_apart_by_the_draws_writers_header():
    logger = b'{"version":1,"topic":"logger","values":["info: 0.5 seconds (Sampling)"]}'
    draws = DRAWS_HEADER + b"lp__\n" + np.array([1.0]).tobytes()
    found = chain_output([logger, draws, b""])
    assert found.draws == draws and found.text == logger + b"\n\n"


@pytest.mark.slow
@pytest.mark.stan
def test_bad_data_fails_with_stans_message():
    spec = models.get(EIGHT_SCHOOLS)
    data = {**spec.data(CONFIG.size, CONFIG.data_seed()), "sigma": -np.ones(8)}
    child = stan_child.sample(EIGHT_SCHOOLS, data, CONFIG, SEED)
    assert child.ours is None and child.error is not None
    kind, message = child.error
    assert kind == "RuntimeError"
    assert re.search(r"Stan chain 1 failed .*sigma\[1\] is -1, but must be greater", message), message


GUARD_CHECK = """
import sys
from stanjax.runner.measure import metrics  # arviz and scipy, which can import JAX unasked (runner.measure.metrics prevents it)
from stanjax.runner.engines.stan_bundled import _run_chains
assert "jaxlib" not in sys.modules
try:
    _run_chains(None, {}, 0)  # no chains: nothing to fork
    print("without JAX: ran")
except RuntimeError as err:
    print("without JAX: refused:", err)
import jax
jax.numpy.zeros(2).block_until_ready()
try:
    _run_chains(None, {}, 2)
    print("with JAX: ran")
except RuntimeError as err:
    print("with JAX: refused:", err)
"""


def test_the_chain_driver_refuses_to_fork_once_jax_is_loaded():
    done = subprocess.run([WORKER_PYTHON, "-c", GUARD_CHECK], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "without JAX: ran", done.stdout
    assert lines[1].startswith("with JAX: refused:") and "has loaded JAX (jaxlib is imported)" in lines[1], done.stdout


# Loaded at start-up by every Python process started with this folder on PYTHONPATH: notes who imported jaxlib,
# and at exit (os._exit too) writes what the process's __main__ module was and whether jaxlib was imported.
IMPORT_WATCH = """
import atexit, json, os, sys, traceback

_jaxlib_stack = []


class _WatchJaxlib:
    def find_spec(self, name, path=None, target=None):
        if name == "jaxlib" and not _jaxlib_stack:
            frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith("<frozen")]
            _jaxlib_stack.append("".join(traceback.format_list(frames)))
        return None  # the import goes on as usual


sys.meta_path.insert(0, _WatchJaxlib())


@atexit.register
def _report():
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    folder = os.environ["STANJAX_TEST_IMPORT_REPORTS"]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as file:
        json.dump({"main": spec.name if spec else None, "jaxlib": "jaxlib" in sys.modules,
                   "jaxlib_stack": _jaxlib_stack[0] if _jaxlib_stack else None}, file)


_started_in, _exit = os.getpid(), os._exit


def _exit_reporting(code):  # the worker leaves by os._exit, past atexit; its forked chains do too, unreported
    if os.getpid() == _started_in:
        _report()
    _exit(code)


os._exit = _exit_reporting
"""


@pytest.mark.stan
def test_the_worker_of_a_stan_job_never_loads_jax(tmp_path, monkeypatch):
    """Two real runs (the program as stanc translates it by default and with --O1), each in a worker that never
    imports jaxlib; each record says how its program was translated."""
    from stanjax.runner.commands.cli import main
    from stanjax.runner.core import records

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(IMPORT_WATCH)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("STANJAX_TEST_IMPORT_REPORTS", str(tmp_path / "imports"))
    # A real run: the campaign starts `python -m stanjax.runner.measure.worker` for the job, which compiles (cached) and samples.
    out = tmp_path / "results"
    argv = ["run", "--suite", "tiny", "--models", EIGHT_SCHOOLS, "--engines", "stan", "--out", str(out)]
    code = main([*argv, "--stan-programs", "model,model-O1"])
    reports = [json.loads(file.read_text()) for file in (tmp_path / "imports").glob("*.json")]
    workers = [report for report in reports if report["main"] == "stanjax.runner.measure.worker"]
    assert len(workers) == 2
    for worker in workers:
        assert not worker["jaxlib"], f"the Stan worker imported jaxlib:\n{worker['jaxlib_stack']}"
    assert code == 0
    translated = {(r.program, r.label, r.engine_info["stanc_options"]) for r in records.read(out)}
    assert translated == {("", "Stan-CPU", ""), ("O1", "Stan-CPU-O1", "--O1")}


@pytest.mark.stan
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_one_chain_on_two_cores_runs_the_reduce_sum_program_on_both(tmp_path):
    """One chain x 2 threads: Stan's threaded program, the chain pinned to both cores, the record says so."""
    from stanjax.runner.commands.cli import main
    from stanjax.runner.core import records

    model_id = "covtype_synth-logistic_regression"
    out = tmp_path / "results"
    assert main(
        [
            "run",
            "--suite",
            "tiny",
            "--models",
            model_id,
            "--engines",
            "stan",
            "--chains",
            "1",
            "--cores",
            "2",
            "--threads-per-chain",
            "2",
            "--out",
            str(out),
        ]
    ) in (0, 1)  # one chain: the R-hat gate may fail
    [run] = records.read(out)
    assert run.status == "ok", run.error
    assert (run.threads_per_chain, run.cores, run.label) == (2, 2, "Stan-CPU-2threads")
    assert run.engine_info["grainsize"] == 1 and run.engine_info["threads_per_chain"] == 2
    assert "pinned to its own 2 cores" in run.engine_info["chain_processes"]


def test_a_module_carried_from_another_machine_is_told_apart_from_one_built_here(tmp_path, monkeypatch):
    """A module filed by docker/gpu-stan-carried.py (built on the project's machine, carried to a GPU box whose own
    builds crashed) keeps a note in place of the compiler's output; the record says so, where a module this
    machine compiled says nothing."""
    import httpstan.cache

    from stanjax.runner.engines.stan_build import CARRIED_MARK, carried_from

    monkeypatch.setattr(httpstan.cache, "cache_directory", lambda: tmp_path)
    carried, built, unknown = (tmp_path / "models" / name for name in ("carried1", "builthere", "nolog"))
    for folder in (carried, built, unknown):
        folder.mkdir(parents=True)
    note = f"{CARRIED_MARK}built on epyc-2core (g++ 12.2.0) as models/abc, filed here by docker/gpu-stan-carried.py"
    (carried / "stderr.log").write_text(note + "\n")
    (built / "stderr.log").write_text("In file included from stan/model/model_header.hpp:4:\nwarning: carried: x\n")
    assert carried_from("models/carried1") == note
    assert carried_from("models/builthere") is None and carried_from("models/nolog") is None


@pytest.mark.parametrize("timeouts", [1, 3])
def test_stanc_over_httpstans_one_second_is_tried_again(tmp_path, monkeypatch, timeouts):
    """httpstan lets stanc run one second; on a busy machine it can take longer: the build tries again (3 times)
    and a real error still comes back as one line. stanc stands in here, so nothing is compiled."""
    import httpstan.compile

    from stanjax.runner.engines.stan_bundled import HttpstanBackend
    from stanjax.runner.engines.stanc import STANC_TRIES

    calls = []

    def stanc(program_code, name):
        calls.append(name)
        if len(calls) <= timeouts:
            raise subprocess.TimeoutExpired(["stanc"], 1)
        raise ValueError("Syntax error in 'planted.stan', line 1")

    monkeypatch.setattr(httpstan.compile, "compile", stanc)
    program = tmp_path / "planted.stan"
    program.write_text(f"// {tmp_path}: a program no cache holds\nparameters {{ real x; }}\n")
    with pytest.raises(RuntimeError) as failed:
        HttpstanBackend().compile(program)
    assert len(calls) == min(timeouts + 1, STANC_TRIES)
    assert ("Syntax error" in str(failed.value)) == (timeouts < STANC_TRIES)
    assert str(failed.value).startswith("planted.stan failed to compile: ")


def test_the_services_folder_outlives_the_venv_that_made_it(tmp_path, monkeypatch):
    """Two checkouts share httpstan's cache: where the venv whose files the services folder links to is gone,
    its links are pointed at this venv's, so modules built anywhere still find libtbb (their rpath is the
    folder's lib)."""
    import httpstan.cache
    import httpstan.models

    from stanjax.runner.engines.stan_build import services_folder, services_path

    monkeypatch.setattr(httpstan.cache, "cache_directory", lambda: tmp_path)
    folder = services_path("-O3", False)
    folder.mkdir(parents=True)
    (folder / "stan_services.o").write_bytes(b"built earlier")
    for name in ("include", "lib"):
        (folder / name).symlink_to(tmp_path / "deleted-venv" / name)
    assert services_path("-O3", True) != folder
    assert services_folder("-O3", False) == folder and (folder / "stan_services.o").read_bytes() == b"built earlier"
    package = Path(httpstan.models.__file__).parent.resolve()
    assert {name: (folder / name).resolve() for name in ("include", "lib")} == {
        "include": package / "include",
        "lib": package / "lib",
    }


def test_an_httpstan_without_headers_refuses_a_program_not_carried_in_one_line(tmp_path, monkeypatch):
    """On a GPU box whose httpstan is docker/slim-httpstan.py's (no C++ headers), a program whose module was not
    carried is one line naming the remedy, before httpstan would try a compile that cannot work."""
    import httpstan.models

    from stanjax.runner.engines.stan_bundled import HttpstanBackend

    slimmed = tmp_path / "httpstan"
    (slimmed / "include" / "stan").mkdir(parents=True)  # version.hpp's folder stays, stan/model/ does not
    monkeypatch.setattr(httpstan.models, "__file__", str(slimmed / "models.py"))
    program = tmp_path / "not_carried.stan"
    program.write_text(f"parameters {{ real y; }}\nmodel {{ y ~ normal(0, 1); }}\n// {tmp_path}\n")
    with pytest.raises(RuntimeError, match=r"not_carried.stan is not compiled here .* carry its module"):
        HttpstanBackend().compile(program)


CACHED_LOAD = """
import sys
from stanjax import models
from stanjax.runner.engines.stan_bundled import HttpstanBackend
handle = HttpstanBackend().compile(models.get("eight_schools-eight_schools_noncentered").stan_file)
print(handle["cached"], "stan.common" in sys.modules)
"""


@pytest.mark.stan
def test_a_cached_program_is_loaded_without_starting_httpstans_server():
    """Half a second of every Stan run's start was httpstan's server answering "already built"; the module is now
    loaded from the cache as the server would load it (pystan's client, stan.common, is never imported)."""
    done = subprocess.run([WORKER_PYTHON, "-c", CACHED_LOAD], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]


READER_ROUNDS = """
import select, sys
from stanjax import models
from stanjax.runner.core.config import RunConfig
from stanjax.runner.engines import stan_bundled
stan_bundled.BATCH_WAIT_S = float(sys.argv[1])
rounds = []
def counted(*args):
    rounds.append(1)
    return select.select(*args)
stan_bundled.select = type(sys)("counted_select")
stan_bundled.select.select = counted
spec = models.get("eight_schools-eight_schools_noncentered")
backend = stan_bundled.HttpstanBackend()
config = RunConfig(size="tiny", chains=2, warmup=500, draws=6000)
result = backend.sample(backend.compile(spec.stan_file), spec.data("tiny", 1), config, seed=4)
print(len(rounds), result.stats.n_leapfrog.size)
"""


@pytest.mark.stan
def test_the_chains_are_read_in_batches():
    """httpstan's writer sent a message or two an iteration; read one by one, the reader woke for each, and each wake
    took a core from a chain where chains outnumber cores (eight schools: 2.4x Stan's clock, one chain and the
    reader on one core). The draws writer sends its buffer every 64 KB and the reader waits a moment after a round
    that brought little: it wakes a few times for every hundred iterations, and fewer with the wait than without."""
    rounds = {}
    for wait in (stan_bundled_wait(), 0.0):
        done = subprocess.run(
            [WORKER_PYTHON, "-c", READER_ROUNDS, str(wait)], cwd=ROOT, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        woken, iterations = map(int, done.stdout.split())
        rounds[wait] = woken / iterations
    batched, unbatched = rounds.values()
    assert batched < unbatched < 0.05, rounds


def stan_bundled_wait() -> float:
    from stanjax.runner.engines.stan_bundled import BATCH_WAIT_S

    return BATCH_WAIT_S
