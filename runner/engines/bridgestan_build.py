"""How nutpie_stan builds a Stan program: a BridgeStan shared library, made by BridgeStan's makefile in the build
``find_bridgestan`` finds (benchmarks/bridgestan_from_httpstan.sh assembles one from httpstan's Stan), cached in
stanjax's cache by content (the program, stanc's options, the make variables, the build and its versions).

The flags are the bundled Stan's for the ISA (-O3, -march=native by default, symbols hidden, no debug information),
with ``STAN_THREADS``, which nutpie needs: its chains are threads of one process sharing the library, and its
bridgestan crate refuses a library built without it. The thread-local autodiff stack that
comes with it is reached in the initial-exec TLS model, as an executable reaches it: in a shared library the default
model calls ``__tls_get_addr`` at every autodiff node, which made arma's gradient 1.8x dearer here (0.032 against
0.018 ms through bridgestan's Python side, the fastest of 5 x 20,000 calls on one core; built initial-exec, 0.018 ms,
as without STAN_THREADS), the cost the bundled Stan avoids by leaving ``STAN_THREADS`` out. The model's TLS is 73
bytes, well within the static TLS glibc keeps for libraries loaded later.

BridgeStan links every model with one bridge object (its C API over the model), built with the first model's flags
and kept; a model built with -march=native beside one built without is the mix whose halves disagree on Eigen's
alignment (``stan_build``), so each ISA links a bridge object of its own, as CmdStan's main object
(``stan_cmdstan``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from stanjax.runner.core import isa as isas
from stanjax.runner.core.paths import cache_dir
from stanjax.runner.engines.stan_output import _stan_version

# nutpie's chains share the library from threads; the autodiff stack then is thread-local, reached as an executable
# reaches it (the module docstring says why).
THREADS = "STAN_THREADS=true"
TLS_MODEL = "-ftls-model=initial-exec"
FAILURE_TAIL_LINES = 20


@dataclass(frozen=True)
class Program:
    """A built program: its library and what the record says of its build."""

    library: Path
    code: str
    info: dict
    compile_s: float
    cached: bool


@dataclass(frozen=True)
class BridgeStanBuild:
    """A BridgeStan build folder: its makefile, sources, stanc and Stan's headers."""

    root: Path

    def versions(self) -> dict:
        """BridgeStan's version (its C side, from src/version.hpp) and the Stan library it compiles against."""
        header = (self.root / "src" / "version.hpp").read_text()
        parts = dict(re.findall(r"#define BRIDGESTAN_(MAJOR|MINOR|PATCH) (\d+)", header))
        return {
            "bridgestan_version": f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}",
            "stan_version": _stan_version(self.root / "stan" / "src" / "stan" / "version.hpp"),
        }

    def make_variables(self, isa: str) -> list[str]:
        """The make variables a program for ``isa`` is built with: threads, the ISA's flags and the TLS model in
        CXXFLAGS_OPTIM (Stan Math's "additional flags"), and the bridge object of the ISA (``BRIDGE_O``)."""
        tag = re.sub(r"[^A-Za-z0-9]+", "-", isas.stan_flags(isa)).strip("-")
        return [
            THREADS,
            f"CXXFLAGS_OPTIM={isas.stan_flags(isa)} {TLS_MODEL}",
            f"BRIDGE_O=src/bridgestan_threads_{tag}.o",
        ]

    def flags(self, variables: list[str]) -> str:
        """The compiler's flags as BridgeStan's makefile gives them with ``variables`` (its ``print-`` targets)."""
        printed = [
            self.make([*variables, f"print-{name}"]).partition(" = ")[2].strip() for name in ("CXXFLAGS", "CPPFLAGS")
        ]
        return " ".join(part for part in printed if part)

    def make(self, arguments: list[str]) -> str:
        """BridgeStan's make with ``arguments``, in its folder; its output, or a RuntimeError with its last lines."""
        done = subprocess.run(
            [os.environ.get("MAKE", "make"), *arguments],
            cwd=self.root,
            capture_output=True,
            text=True,
            errors="replace",
        )
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-FAILURE_TAIL_LINES:])
            raise RuntimeError(f"BridgeStan's make {' '.join(arguments[-1:])} failed:\n{tail}")
        return done.stdout

    def build_bridge_object(self, variables: list[str]) -> None:
        """The ISA's bridge object, unless it is there: made under a name of this process's own, then renamed into
        place, so two builds at once never link a half-written one."""
        bridge = dict(variable.split("=", 1) for variable in variables)["BRIDGE_O"]
        if (self.root / bridge).exists():
            return
        partial = f"{bridge}.{os.getpid()}.partial"
        self.make([*(v for v in variables if not v.startswith("BRIDGE_O=")), f"BRIDGE_O={partial}", partial])
        os.replace(self.root / partial, self.root / bridge)

    def compile(self, stan_file: Path, isa: str = "native", stanc_options: tuple[str, ...] = ()) -> Program:
        """``stan_file`` built for ``isa``, translated with ``stanc_options`` (e.g. --O1), or found in the cache."""
        import bridgestan

        code = stan_file.read_text()
        variables = self.make_variables(isa)
        versions = self.versions()
        key = json.dumps([code, list(stanc_options), variables, str(self.root.resolve()), versions])
        folder = cache_dir() / "bridgestan" / hashlib.sha256(key.encode()).hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        library = folder / f"{stan_file.stem}_model.so"
        start = time.perf_counter()
        with _locked(folder / ".lock"):  # one build of a program at a time; the others then find it
            cached = library.exists()
            if not cached:
                self.build_bridge_object(variables)
                (folder / "build.json").write_text(json.dumps({"compile_flags": self.flags(variables)}))
                bridgestan.set_bridgestan_path(self.root)
                with tempfile.TemporaryDirectory(
                    dir=folder
                ) as build:  # whole or not at all: a killed build leaves none
                    source = Path(build) / stan_file.name
                    source.write_text(code)
                    built = bridgestan.compile_model(source, stanc_args=list(stanc_options), make_args=variables)
                    os.replace(built, library)
        info = {
            **versions,
            "bridgestan_path": str(self.root),
            "make_variables": variables,
            **json.loads((folder / "build.json").read_text()),
            "stan_threads": True,
            "stanc_options": " ".join(stanc_options),
            **isas.info(isa),
        }
        return Program(library, code, info, time.perf_counter() - start, cached)


@contextlib.contextmanager
def _locked(path: Path):
    """Meanwhile no other process holds ``path``'s lock (released when the holder exits, however it exits)."""
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
