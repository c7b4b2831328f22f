"""How the bundled Stan builds a program: STAN_THREADS only where the program runs threads (its autodiff stack in
thread-local storage cost arma 2x a gradient), symbols hidden so a module of each kind samples in one process."""

import subprocess
from pathlib import Path

import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.engines import stan_build
from stanjax.runner.engines.stan_bundled import HttpstanBackend
from stanjax.runner.measure.jobs import WORKER_PYTHON

COVTYPE = "covtype_synth-logistic_regression"
EIGHT_SCHOOLS = "eight_schools-eight_schools_noncentered"


def test_only_programs_that_run_threads_are_built_with_stan_threads():
    spec = models.get(COVTYPE)
    assert spec.stan_threaded_file is not None
    plain, threaded = (
        HttpstanBackend.program_code(path, "native") for path in (spec.stan_file, spec.stan_threaded_file)
    )
    assert "without STAN_THREADS" in plain and "with STAN_THREADS" in threaded
    assert plain.split("// stanjax:")[1] != threaded.split("// stanjax:")[1]  # their own cache keys
    assert ("STAN_THREADS", None) in stan_build.macros(True) and ("STAN_THREADS", None) not in stan_build.macros(False)
    assert stan_build.uses_threads(spec.stan_threaded_file.read_text())
    assert not stan_build.uses_threads(spec.stan_file.read_text())
    assert stan_build.HIDDEN_SYMBOLS in stan_build.flags("native")
    assert stan_build.services_path("-O3", True) != stan_build.services_path("-O3", False)


BOTH_KINDS = f"""
from stanjax import models
from stanjax.runner.core.config import RunConfig
from stanjax.runner.engines.stan_bundled import HttpstanBackend
backend = HttpstanBackend()
config = RunConfig(size="tiny", chains=2, warmup=100, draws=100)
covtype, schools = models.get("{COVTYPE}"), models.get("{EIGHT_SCHOOLS}")
runs = [
    (covtype.stan_threaded_file, {{**covtype.data("tiny", 1), "grainsize": 1}}),
    (schools.stan_file, schools.data("tiny", 1)),
    (covtype.stan_file, covtype.data("tiny", 1)),
]
handles = [(backend.compile(path), data) for path, data in runs]  # every module loaded before any samples
for handle, data in handles:
    result = backend.sample(handle, data, config, seed=3)
    print(result.info["stan_threads"], result.stats.n_leapfrog.sum() > 0)
"""


@pytest.mark.stan
def test_a_module_with_stan_threads_and_modules_without_sample_in_one_process():
    """A test process (or a density check) loads many modules; built with default visibility, a module without
    STAN_THREADS loaded beside one with it shared its autodiff stack and the process died (segfault, exit 139)."""
    done = subprocess.run([WORKER_PYTHON, "-c", BOTH_KINDS], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True", "False", "True", "False", "True"]


def test_the_services_object_is_built_without_httpstans_diagnostic_writer_and_with_the_draws_writer():
    """httpstan's diagnostic writer formats every iteration's values, momenta and gradients as JSON that nothing
    reads (a quarter of eight schools' chain CPU), its sample writer every draw as JSON the engine parsed back: both
    samplers get Stan's no-op writer and the draws writer, and a source that does not construct the writers as
    expected is refused rather than built unchanged."""
    import httpstan

    cpp = (Path(httpstan.__file__).parent / "stan_services.cpp").read_text()
    built = stan_build.services_source(cpp)
    assert stan_build.DIAGNOSTIC_WRITER not in built and built.count(stan_build.NO_OP_WRITER) == 2
    assert stan_build.SAMPLE_WRITER not in built and built.count(stan_build.DRAWS_WRITER) == 2
    include = f'\n#include "{stan_build.DRAWS_WRITER_SOURCE.name}"'
    unchanged = (
        built.replace(stan_build.NO_OP_WRITER, stan_build.DIAGNOSTIC_WRITER)
        .replace(stan_build.DRAWS_WRITER, stan_build.SAMPLE_WRITER)
        .replace(include, "", 1)
    )
    assert unchanged == cpp  # nothing else changed
    for writer in (stan_build.DIAGNOSTIC_WRITER, stan_build.SAMPLE_WRITER):
        with pytest.raises(RuntimeError, match="writers as expected"):
            stan_build.services_source(cpp.replace(writer, "new other_writer()", 1))
    code = HttpstanBackend.program_code(models.get(EIGHT_SCHOOLS).stan_file, "native")
    assert "no diagnostic writer, draws as doubles" in code  # httpstan's cache key: a build of its own


CONNECTIONS = f"""
import socket
from stanjax import models
from stanjax.runner.core.config import RunConfig
from stanjax.runner.engines import stan_bundled
accepted = []
class Counted(socket.socket):
    def accept(self):
        accepted.append(1)
        return super().accept()
stan_bundled.socket = type(socket)("counted_socket")
stan_bundled.socket.__dict__.update({{**socket.__dict__, "socket": Counted}})
spec = models.get("{EIGHT_SCHOOLS}")
backend = stan_bundled.HttpstanBackend()
result = backend.sample(backend.compile(spec.stan_file), spec.data("tiny", 1), RunConfig(size="tiny", chains=2,
    warmup=100, draws=100), seed=3)
print(len(accepted), result.info["diagnostic_writer"])
"""


@pytest.mark.stan
def test_a_chain_connects_its_logger_init_and_sample_writers_only():
    """Each chain's writers connect to its socket when constructed: the logger, the init and the sample writer
    (httpstan's own build connects a fourth, the diagnostic writer: 8 for two chains, seen by hand)."""
    done = subprocess.run([WORKER_PYTHON, "-c", CONNECTIONS], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    count, writer = done.stdout.strip().split(" ", 1)
    assert int(count) == 6 and writer.startswith("none")


def test_one_process_at_a_time_builds_a_program():
    """CI's precompile built nes1980's and nes1988's shared program at once and left a truncated module ("file too
    short"): a compile of a program waits while another holds its lock (flock: a second open of the file waits,
    in this process too); another program's lock does not."""
    import threading
    import time

    import httpstan.models

    spec = models.get(EIGHT_SCHOOLS)
    name = httpstan.models.calculate_model_name(HttpstanBackend.program_code(spec.stan_file, "native"))
    held, hold_s = threading.Event(), 1.0

    def hold() -> None:
        with stan_build.building(name):
            held.set()
            time.sleep(hold_s)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    start = time.perf_counter()
    with stan_build.building("models/another-program"):
        other_s = time.perf_counter() - start
    HttpstanBackend().compile(spec.stan_file)
    compile_s = time.perf_counter() - start
    holder.join()
    assert other_s < 0.2 * hold_s
    assert compile_s > 0.9 * hold_s


def test_the_cache_is_asked_in_process_for_a_program_as_its_build_names_it(tmp_path):
    """``cached`` answers as ``compile`` would find it: a program once compiled is in the cache; the same program
    with one more comment is another entry."""
    spec = models.get(EIGHT_SCHOOLS)
    HttpstanBackend().compile(spec.stan_file)  # in the cache already after the precompile: seconds
    assert HttpstanBackend.cached(spec.stan_file)
    edited = tmp_path / spec.stan_file.name
    edited.write_text(f"{spec.stan_file.read_text()}\n// {tmp_path.name}\n")
    assert not HttpstanBackend.cached(edited)


@pytest.mark.parametrize("with_threads", [False, True])
def test_the_header_is_built_with_the_builds_macros_and_arguments(tmp_path, with_threads):
    command = stan_build.header_command(tmp_path / "h.hpp", "native", with_threads)
    assert set(stan_build.macro_args(with_threads) + stan_build.HTTPSTAN_ARGS.split()) <= set(command)
    assert ("-DSTAN_THREADS" in command) == with_threads and "-fvisibility=hidden" in command
    assert command[-5:] == ["-x", "c++-header", str(tmp_path / "h.hpp"), "-o", f"{tmp_path / 'h.hpp'}.gch"]
    assert "-fPIC" in command and stan_build.NO_DEBUG_INFO in command  # Python's flags for a module, no debug info


def test_the_macros_and_arguments_are_httpstans_own():
    """Read from httpstan's build function: an httpstan upgrade that changes them fails here, not silently in a
    compiler that refuses the header."""
    import inspect

    import httpstan.models

    source = inspect.getsource(httpstan.models.build_services_extension_module)
    for name, value in stan_build.HTTPSTAN_MACROS:  # the bundled Stan engine's copy, also its services build's
        assert (f'("{name}", "{value}")' if value else f'("{name}", None)') in source, name
    for argument in stan_build.HTTPSTAN_ARGS.split():
        assert f'"{argument}"' in source, argument


def test_what_programs_share_is_built_once_before_them_and_a_header_only_where_two_share_a_build(monkeypatch):
    """Each build's services object once (two processes that each found it missing built it twice), a precompiled
    header only for a build two or more programs share (for one, building the header costs more than it saves)."""
    done = []
    monkeypatch.setattr(stan_build, "_services_line", lambda isa, threads: done.append(("services", isa, threads)))
    monkeypatch.setattr(stan_build, "precompile_header", lambda isa, threads: done.append(("header", isa, threads)))
    builds = [("native", False), ("native", True), ("native", False), ("x86-64-v2", False), ("native", False)]
    stan_build.prepare(builds, 2)
    assert sorted(done) == [
        ("header", "native", False),
        ("services", "native", False),
        ("services", "native", True),
        ("services", "x86-64-v2", False),
    ]


def test_a_program_reads_its_builds_precompiled_header_only_where_one_is_built(tmp_path, monkeypatch):
    header = tmp_path / "native-plain-0" / stan_build.PCH_HEADER
    monkeypatch.setattr(stan_build, "header_path", lambda isa, threads: header)
    assert stan_build.header_flags("native", False) == ""
    header.parent.mkdir()
    Path(f"{header}.gch").write_bytes(b"")
    assert stan_build.header_flags("native", False) == f"-Winvalid-pch -include {header}"


def test_each_build_has_a_header_of_its_own():
    paths = {stan_build.header_path(isa, threads) for isa in ("native", "x86-64-v2") for threads in (False, True)}
    assert len(paths) == 4 and len({path.parent.parent for path in paths}) == 1


@pytest.mark.slow
@pytest.mark.stan
def test_the_precompiled_header_is_used_and_no_debug_information_is_written(tmp_path):
    """A program compiled once its build's header is precompiled (make test's precompile built it: reused) reads it:
    GCC says why where it refuses one (-Winvalid-pch), and says nothing here; its module carries no debug
    information (-g0 beside Python's -g)."""
    import httpstan.cache
    import httpstan.models

    from tests.precompile import unused_header

    assert "FAILED" not in stan_build.precompile_header("native", False)
    assert stan_build.header_flags("native", False).startswith("-Winvalid-pch -include")
    program = tmp_path / "eight_schools.stan"  # a program of its own (one more comment): compiled here, not cached
    program.write_text(f"{models.get(EIGHT_SCHOOLS).stan_file.read_text()}\n// {tmp_path.name}\n")
    handle = HttpstanBackend().compile(program)
    output = httpstan.cache.load_services_extension_module_compiler_output(handle["model_name"]) or ""
    assert not handle["cached"] and unused_header(output) is None, output[-2000:]
    [module] = [p for p in httpstan.cache.model_directory(handle["model_name"]).iterdir() if p.suffix == ".so"]
    sections = subprocess.run(["readelf", "-S", "-W", str(module)], capture_output=True, text=True, check=True).stdout
    assert ".debug_info" not in sections
    httpstan.cache.delete_model_directory(handle["model_name"])


def test_the_messages_of_what_programs_share_go_to_the_compile_log(tmp_path, monkeypatch, capfd):
    """The services object is compiled in the campaign's process: its compiler's warnings filled `make report`'s
    terminal; with a log they go there, as the programs' own do."""

    def noisy(isa: str, threads: bool) -> str:
        subprocess.run(["sh", "-c", "echo 'warning: lp may be used uninitialized' >&2"], check=True)
        return "services object: built"

    monkeypatch.setattr(stan_build, "_services_line", noisy)
    assert stan_build.prepare([("native", False)], 1, tmp_path / "compile.log") == ["services object: built"]
    assert "may be used uninitialized" in (tmp_path / "compile.log").read_text()
    assert "may be used uninitialized" not in capfd.readouterr().err
