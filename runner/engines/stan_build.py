"""How the bundled Stan builds a program into httpstan's cache: the compiler's flags and Stan's macros, the same for
the model's module and for the NUTS object (``stan_services.o``) it links, and the notes a carried module keeps.

httpstan builds every module with ``STAN_THREADS``. In a shared object that puts Stan Math's autodiff stack in
thread-local storage reached through ``__tls_get_addr`` on every autodiff node: arma's gradient cost 2.0-2.3x
its cost without it here (0.058 against 0.029 ms, one chain on one core; in a CmdStan executable the same macro costs
nothing measurable). So, as CmdStan builds by default, only programs that run Stan's threads (``reduce_sum``,
``map_rect``) get it.

httpstan's services object also sends every iteration's unconstrained values, momenta and gradients to a diagnostic
writer that formats them as JSON; nothing reads them (CmdStan writes them only when asked for a diagnostic file). On
eight schools (a 2 microsecond gradient) that formatting took a quarter of the chain's CPU. So the services object
is built with Stan's no-op writer in its place (``NO_OP_WRITER``). Its sample writer formatted every draw as a JSON
object of names and decimals, sent in two calls, which the engine parsed back: 0.19 s a chain of 50,000 draws of
eight schools, a third of its sampler's time. The draws writer (``draws_writer.hpp``) sends the doubles themselves,
buffered, as the JAX engines keep theirs (``DRAWS_WRITER``), in the chains the engine forks; pystan, sampling the
same module (the density check, the tests), gets httpstan's writer and its JSON.

Without debug information (``-g0``: Python's flags, which setuptools gives httpstan's build, carry ``-g``), and
where two or more programs of one build are compiled together, with Stan's model header precompiled once for that
build (``precompile_header``; CmdStan does the same by default with g++): most of a program's compile is parsing
Stan's headers. Neither changes an instruction the compiler generates.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stanjax.runner.core import isa as isas

# httpstan's own compile arguments for a model's module (httpstan/models.py), after setuptools' flags.
HTTPSTAN_ARGS = "-O3 -std=c++17 -Wno-sign-compare"

# httpstan's macros for Stan code (httpstan/models.py), for its services object as for a model.
HTTPSTAN_MACROS = [
    ("BOOST_DISABLE_ASSERTS", None),
    ("BOOST_PHOENIX_NO_VARIADIC_EXPRESSION", None),
    ("STAN_THREADS", None),
    ("_REENTRANT", None),
    ("_GLIBCXX_USE_CXX11_ABI", "0"),
]

# Each module's symbols hidden, as pybind11 advises for extension modules: then a module built without STAN_THREADS
# and one built with it each keep their own autodiff stack in one process. With default visibility the dynamic
# linker bound both to one (a unique symbol, thread-local in one module and not in the other) and the process
# crashed as the second sampled.
HIDDEN_SYMBOLS = "-fvisibility=hidden -fvisibility-inlines-hidden"

# Debug information: no run reads it, and writing it took a large share of a program's compile.
NO_DEBUG_INFO = "-g0"
# Stan's model header, precompiled per build in httpstan's cache (``precompile_header``).
PCH_FOLDER = "stanjax-pch"
PCH_HEADER = "stan_model_header.hpp"

CARRIED_MARK = "carried: "

# httpstan's diagnostic writer, in each sampling wrapper of stan_services.cpp, and Stan's base writer (a no-op).
DIAGNOSTIC_WRITER = 'new stan::callbacks::socket_writer(socket_filename, "diagnostic_writer:")'
NO_OP_WRITER = "new stan::callbacks::writer()"
# httpstan's sample writer, and in its place the draws writer where DRAWS_WRITER_ENV is set, else httpstan's (its
# source beside this module).
SAMPLE_WRITER = 'new stan::callbacks::socket_writer(socket_filename, "sample_writer:")'
DRAWS_WRITER = "stanjax::sample_writer(socket_filename)"
DRAWS_WRITER_ENV = "STANJAX_DRAWS_WRITER"
DRAWS_WRITER_SOURCE = Path(__file__).with_name("draws_writer.hpp")
WRITERS_INCLUDE = '#include "socket_writer.hpp"'  # httpstan's writers; the draws writer's include goes after it


def uses_threads(code: str) -> bool:
    """Whether a Stan program runs Stan's threads (``reduce_sum``, ``map_rect``), so needs ``STAN_THREADS``."""
    return "reduce_sum" in code or "map_rect" in code


def flags(isa: str) -> str:
    """The compiler flags a bundled build gets for ``isa``: the ISA's, symbols hidden, no debug information."""
    return f"{isas.stan_flags(isa)} {HIDDEN_SYMBOLS} {NO_DEBUG_INFO}"


def macros(threads: bool) -> list[tuple[str, str | None]]:
    """httpstan's macros, ``STAN_THREADS`` only where ``threads``."""
    return [macro for macro in HTTPSTAN_MACROS if threads or macro[0] != "STAN_THREADS"]


def macro_args(threads: bool) -> list[str]:
    """``macros(threads)`` as compiler arguments."""
    return [f"-D{name}" if value is None else f"-D{name}={value}" for name, value in macros(threads)]


def described(isa: str, threads: bool) -> str:
    """A build in words, for records and the program's comment (httpstan's cache key)."""
    return (
        f"{flags(isa)}, {'with' if threads else 'without'} STAN_THREADS, no diagnostic writer, draws as doubles "
        f"(writer {writer_version()})"
    )


def writer_version() -> str:
    """The draws writer's source, hashed: in a build's description, so a module linked with an earlier writer is
    never found in httpstan's cache for this one (its key is the program's text with the description)."""
    return hashlib.sha256(DRAWS_WRITER_SOURCE.read_bytes()).hexdigest()[:8]


@contextlib.contextmanager
def building(model_name: str):
    """Meanwhile no other process builds httpstan's ``model_name``: two processes that built one program at once (two
    models sharing a program, compiled two at a time) left a truncated module in the cache ("file too short"), and
    httpstan writes its module in place. The lock is a file beside httpstan's cache, released when the holder exits.
    """
    import httpstan.cache

    locks = httpstan.cache.cache_directory() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{model_name.replace('/', '_')}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def built_as(isa: str, threads: bool):
    """httpstan's builds meanwhile get the build's flags (appended to CPPFLAGS; with the build's precompiled header
    where ``precompile_header`` made one), its macros and a services object built alike."""
    with (  # the services object first: its own compile (where missing) gets the flags as arguments, no header
        _services_built_with(flags(isa), threads),
        _appended_cppflags(f"{flags(isa)} {header_flags(isa, threads)}".strip()),
        _macros(threads),
    ):
        yield


@contextlib.contextmanager
def _appended_cppflags(extra: str):
    """CPPFLAGS with ``extra`` appended, restored after: httpstan builds in this process (pystan's server runs
    in it), and setuptools adds CPPFLAGS to its compile command (CFLAGS and CXXFLAGS would replace Python's
    flags instead). httpstan has no argument for extra flags on that route."""
    before = os.environ.get("CPPFLAGS")
    os.environ["CPPFLAGS"] = f"{before} {extra}" if before else extra
    try:
        yield
    finally:
        if before is None:
            del os.environ["CPPFLAGS"]
        else:
            os.environ["CPPFLAGS"] = before


@contextlib.contextmanager
def _macros(threads: bool):
    """httpstan's builds meanwhile get ``macros(threads)``: its macros are fixed inside its build function, so the
    one call that builds (``httpstan.build_ext.run_build_ext``) is given the extension with them replaced."""
    import httpstan.build_ext

    before = httpstan.build_ext.run_build_ext

    def run_build_ext(extensions, build_lib):
        for extension in extensions:
            extension.define_macros = macros(threads)
        return before(extensions, build_lib)

    httpstan.build_ext.run_build_ext = run_build_ext
    try:
        yield
    finally:
        httpstan.build_ext.run_build_ext = before


@contextlib.contextmanager
def _services_built_with(build_flags: str, threads: bool):
    """httpstan links every model with its prebuilt ``stan_services.o`` (NUTS, the writers), built for baseline
    x86-64. A model built with -march=native beside it is one module whose halves disagree on Eigen's alignment
    (AVX: 32 bytes): chains died with "double free or corruption" in NUTS's build_tree on Bradley-Terry, the
    mixture and the S&P 500. So meanwhile httpstan builds from a package folder whose ``stan_services.o`` was
    compiled with the model's flags and macros (``services_folder``)."""
    import httpstan.models

    before = httpstan.models.PACKAGE_DIR
    httpstan.models.PACKAGE_DIR = services_folder(build_flags, threads)
    try:
        yield
    finally:
        httpstan.models.PACKAGE_DIR = before


def services_path(build_flags: str, threads: bool) -> Path:
    """Where ``services_folder`` keeps the services object built with ``build_flags`` and ``macros(threads)``, in
    httpstan's cache."""
    import httpstan.cache

    writers = f"{NO_OP_WRITER}|{DRAWS_WRITER_SOURCE.read_text()}"
    key = hashlib.sha256(f"{build_flags}|{macros(threads)}|{writers}".encode()).hexdigest()[:12]
    return httpstan.cache.cache_directory() / "stanjax-services" / key


def services_folder(build_flags: str, threads: bool) -> Path:
    """A stand-in for httpstan's package folder, in httpstan's cache (its model modules' rpath points into it):
    links to its ``include`` and ``lib``, and its ``stan_services.cpp`` (with ``services_source``'s writer) compiled
    as httpstan compiles a model, with ``build_flags`` and ``macros(threads)`` (once per build and httpstan version;
    minutes). Every checkout's venv shares it: a link into a venv since deleted is pointed at this one's (the same httpstan version's files)."""
    import httpstan.models
    from setuptools._distutils import sysconfig
    from setuptools._distutils.ccompiler import new_compiler

    package = Path(httpstan.models.__file__).parent.resolve()
    folder = services_path(build_flags, threads)
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("include", "lib"):
        link = folder / name
        if link.is_symlink() and not link.exists():  # into a venv since deleted: this one's files are the same
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
        with contextlib.suppress(FileExistsError):  # another process building the same folder made it
            link.symlink_to(package / name)
    if (folder / "stan_services.o").exists():
        return folder
    with tempfile.TemporaryDirectory(dir=folder) as build:
        source = Path(build) / "stan_services.cpp"
        source.write_text(services_source((package / "stan_services.cpp").read_text()))
        compiler = new_compiler()
        sysconfig.customize_compiler(compiler)  # Python's flags, and CPPFLAGS, as setuptools builds a model
        [built] = compiler.compile(
            [str(source)],
            output_dir=build,
            macros=list(macros(threads)),  # typed as the stub's (invariant) list of 1- or 2-tuples
            # httpstan's folder for the socket writers its source includes by name, this one's for the draws writer
            include_dirs=[
                str(package),
                str(DRAWS_WRITER_SOURCE.parent),
                str(package / "include"),
                sysconfig.get_python_inc(),
            ],
            extra_postargs=[*HTTPSTAN_ARGS.split(), *build_flags.split()],
        )
        os.replace(built, folder / "stan_services.o")  # whole or not at all: a killed build leaves none
    return folder


def services_source(cpp: str) -> str:
    """httpstan's ``stan_services.cpp`` with Stan's no-op writer for the diagnostic writer and the draws writer for
    the sample writer of both its samplers (NUTS and fixed_param); an httpstan whose source reads otherwise is
    refused rather than built unchanged."""
    if cpp.count(DIAGNOSTIC_WRITER) != 2 or cpp.count(SAMPLE_WRITER) != 2 or cpp.count(WRITERS_INCLUDE) != 1:
        raise RuntimeError("httpstan's stan_services.cpp does not construct its writers as expected")
    with_writer = cpp.replace(WRITERS_INCLUDE, f'{WRITERS_INCLUDE}\n#include "{DRAWS_WRITER_SOURCE.name}"')
    return with_writer.replace(DIAGNOSTIC_WRITER, NO_OP_WRITER).replace(SAMPLE_WRITER, DRAWS_WRITER)


def prepare(builds: list[tuple[str, bool]], at_once: int, log: Path | None = None) -> list[str]:
    """Before programs of these builds (an ISA and whether STAN_THREADS, one a program) are compiled, what they
    share, ``at_once`` at a time: each build's services object (two programs compiled at once had each built a
    missing one, a core's minute twice) and, for a build two or more programs share, its precompiled header (a
    program then compiled in ~11 s, not ~40). A line each, saying what it took; the compilers' messages appended to
    ``log`` where given."""
    from collections import Counter
    from concurrent.futures import ThreadPoolExecutor

    import httpstan.models

    if not (Path(httpstan.models.__file__).parent / "include" / "stan" / "model").is_dir():
        return []  # a slimmed httpstan (carried modules only): each program's compile says why it cannot build
    counts = Counter(builds)
    work = [(_services_line, isa, threads) for isa, threads in counts]
    work += [(precompile_header, isa, threads) for (isa, threads), n in counts.items() if n >= 2]
    with _output_to(log), ThreadPoolExecutor(max_workers=max(1, at_once)) as pool:  # a compiler process each
        return list(pool.map(lambda task: task[0](task[1], task[2]), work))


@contextlib.contextmanager
def _output_to(log: Path | None):
    """This process's standard output and error (and so its compilers') appended to ``log`` meanwhile, where given:
    the services object is compiled in this process, whose terminal is the campaign's."""
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "a") as file:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _services_line(isa: str, threads: bool) -> str:
    start = time.perf_counter()
    built = not (services_path(flags(isa), threads) / "stan_services.o").exists()
    services_folder(flags(isa), threads)
    how = f"built in {time.perf_counter() - start:.0f} s" if built else "reused"
    return f"services object ({described(isa, threads)}): {how}"


def header_path(isa: str, threads: bool) -> Path:
    """Where Stan's model header precompiled for a build (``isa``, with or without STAN_THREADS) is kept, in
    httpstan's cache: a folder per build named by it and a hash of the compile command and the compiler's version,
    so changed flags or another compiler make a header of their own."""
    import httpstan.cache

    probe = header_command(Path(PCH_HEADER), isa, threads)
    version = subprocess.run([probe[0], "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256("\n".join([*probe, version]).encode()).hexdigest()[:12]
    return httpstan.cache.cache_directory() / PCH_FOLDER / f"{_build_name(isa, threads)}-{key}" / PCH_HEADER


def compile_args(isa: str, threads: bool) -> list[str]:
    """The compiler and its arguments for a C++ file of a build: what setuptools runs for a program's module (Python's
    flags for a module, CPPFLAGS), then the build's flags and macros, httpstan's include folders and arguments. The
    precompiled header and the gradient loop's driver (:mod:`stanjax.runner.engines.stan_loop`) are compiled so."""
    import httpstan
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler, get_python_inc

    compiler = new_compiler()
    customize_compiler(compiler)
    includes = [f"-I{Path(httpstan.__file__).parent / 'include'}", f"-I{get_python_inc()}"]
    return [
        *compiler.compiler_so_cxx,  # type: ignore[attr-defined]  # set by customize_compiler
        *flags(isa).split(),
        *macro_args(threads),
        *includes,
        *HTTPSTAN_ARGS.split(),
    ]


def header_command(header: Path, isa: str, threads: bool) -> list[str]:
    """The command that precompiles ``header`` (``compile_args``); a header built otherwise is refused by the
    compiler (``-Winvalid-pch`` says why)."""
    return [*compile_args(isa, threads), "-x", "c++-header", str(header), "-o", f"{header}.gch"]


def header_flags(isa: str, threads: bool) -> str:
    """The compiler arguments that make a program's compile read the build's precompiled header, "" where none is
    built. The header includes Stan's model header, as the program does, so a header the compiler refuses costs
    only the time it saves."""
    header = header_path(isa, threads)
    return f"-Winvalid-pch -include {header}" if Path(f"{header}.gch").exists() else ""


def precompile_header(isa: str, threads: bool) -> str:
    """Stan's model header precompiled for the build (~0.8 GB; a minute or so), once: what happened, in words.
    Another build's older headers (other flags or compiler) are removed; one process at a time builds it."""
    header = header_path(isa, threads)
    with building(f"{PCH_FOLDER}-{header.parent.name}"):
        if Path(f"{header}.gch").exists():
            return f"precompiled header ({described(isa, threads)}): reused"
        for older in header.parent.parent.glob(f"{_build_name(isa, threads)}-*"):
            shutil.rmtree(older, ignore_errors=True)
        header.parent.mkdir(parents=True)
        header.write_text("#include <stan/model/model_header.hpp>\n")
        start = time.perf_counter()
        partial = header.parent / f"partial-{PCH_HEADER}"
        command = [*header_command(header, isa, threads)[:-1], f"{partial}.gch"]
        done = subprocess.run(command, capture_output=True, text=True, errors="replace")
        if done.returncode != 0:
            shutil.rmtree(header.parent, ignore_errors=True)
            return (
                f"precompiled header ({described(isa, threads)}): FAILED, exit {done.returncode}: {done.stderr[-500:]}"
            )
        os.replace(f"{partial}.gch", f"{header}.gch")  # whole or not at all: a killed build leaves none
        return f"precompiled header ({described(isa, threads)}): built in {time.perf_counter() - start:.0f} s"


def _build_name(isa: str, threads: bool) -> str:
    return f"{isa}-{'threads' if threads else 'plain'}"


def carried_from(model_name: str) -> str | None:
    """What the cache says of a module built on another machine and filed here by ``docker/gpu-stan-carried.py``
    (its compiler log holds that note instead of a compiler's output), or None for a module built here: a record
    should say when its Stan was not built by this machine's compiler."""
    import httpstan.cache

    log = httpstan.cache.model_directory(model_name) / "stderr.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return text.strip() if text.startswith(CARRIED_MARK) else None
