"""Bundled Stan's model modules built here, carried to a borrowed GPU box and filed in its httpstan cache.

Why: on the lent H200 of 2026-11-26 every chain of a program compiled there (the image's gcc 13 and Python flags)
died of a segmentation fault, while the lent H100 of 2026-11-23 sampled with modules compiled on the project's
machine (docs/gpu.md). httpstan names a cached module by a hash of the program text and the interpreter (its
version string and path), so a module built here is filed under the name the box's worker interpreter computes;
the module itself does not depend on that name (its init function is always ``stan_services``).

    python docker/gpu-stan-carried.py pack ISA MODEL_ID[:threaded] ...   # here (`make gpu-stan`): compile, copy
                                                                         # into .gpu-stan/ (":threaded": the
                                                                         # reduce_sum program, Stan with threads)
    python docker/gpu-stan-carried.py install                 # there (docker/gpu-step.sh), the workers' interpreter

``pack`` strips the modules' debug sections (25 MB -> 1 MB each) and the ISA's ``stan_services.o`` likewise;
``install`` writes each into the box's cache with the services folder the campaign's compile step looks for, so
that step finds every carried program compiled (``compile_s`` is then a cache load, as the record says).
"""

import json
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CARRIED = ROOT / ".gpu-stan"


def pack(isa: str, programs: list[str]) -> int:
    import httpstan.cache
    import httpstan.models

    from stanjax import models
    from stanjax.runner.commands.compile import model_command
    from stanjax.runner.core import environment
    from stanjax.runner.engines import stan_build
    from stanjax.runner.engines.stan_bundled import HttpstanBackend
    from stanjax.runner.measure.jobs import WORKER_PYTHON

    if Path(sys.executable) != Path(WORKER_PYTHON):
        sys.exit(f"run pack under the workers' interpreter, {WORKER_PYTHON}")
    wanted = [(program.split(":")[0], program.endswith(":threaded")) for program in programs]
    for threaded in (False, True):
        chosen = [model_id for model_id, t in wanted if t == threaded]
        if chosen:  # threads > 1: the reduce_sum program, as a run with threads builds it
            subprocess.run(model_command(*chosen, isa=isa, threads=2 if threaded else 1), check=True)
    CARRIED.mkdir(exist_ok=True)
    flags = stan_build.flags(isa)
    compiler = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    for threads in {threaded for _, threaded in wanted}:  # a threaded program's module, its services object alike
        services = CARRIED / f"stan_services.{isa}{'.threaded' if threads else ''}.o"
        shutil.copy(stan_build.services_path(flags, threads) / "stan_services.o", services)
        subprocess.run(["strip", "--strip-debug", services], check=True)
    index = json.loads((CARRIED / "index.json").read_text()) if (CARRIED / "index.json").exists() else {}
    for model_id, threaded in wanted:
        spec = models.get(model_id)
        code = HttpstanBackend.program_code(spec.stan_threaded_file if threaded else spec.stan_file, isa)
        name = httpstan.models.calculate_model_name(code)
        [module] = [p for p in httpstan.cache.model_directory(name).iterdir() if p.suffix == ".so"]
        stem = f"{model_id}.{isa}{'.threaded' if threaded else ''}"
        shutil.copy(module, CARRIED / f"{stem}.so")
        subprocess.run(["strip", "--strip-debug", CARRIED / f"{stem}.so"], check=True)
        (CARRIED / f"{stem}.stan").write_text(code)
        index[stem] = {
            "model_id": model_id,
            "isa": isa,
            "flags": flags,
            "threads": threaded,
            "built_as": name,
            "built_on": environment.machine().slug,
            "compiler": compiler,
        }
    (CARRIED / "index.json").write_text(json.dumps(index, indent=1))
    # the modules' RUNPATH points into this cache's services folder: where the box's cache differs, its
    # docker/gpu-step.sh puts httpstan's lib on LD_LIBRARY_PATH instead
    (CARRIED / "cache-directory").write_text(str(httpstan.cache.cache_directory()))
    print(f"{len(wanted)} module(s) for {isa} in {CARRIED}")
    return 0


def install() -> int:
    import httpstan.cache
    import httpstan.models

    from stanjax.runner.engines.stan_build import CARRIED_MARK, services_path

    package = Path(httpstan.models.__file__).parent.resolve()
    index = json.loads((CARRIED / "index.json").read_text())
    for isa, flags, threads in {(entry["isa"], entry["flags"], entry["threads"]) for entry in index.values()}:
        folder = services_path(flags, threads)
        folder.mkdir(parents=True, exist_ok=True)
        for part in ("include", "lib"):
            link = folder / part
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(package / part)
        shutil.copy(CARRIED / f"stan_services.{isa}{'.threaded' if threads else ''}.o", folder / "stan_services.o")
    suffix = next(s for s in EXTENSION_SUFFIXES if s.startswith(".cpython"))
    for stem, entry in index.items():
        code = (CARRIED / f"{stem}.stan").read_text()
        name = httpstan.models.calculate_model_name(code)
        directory = httpstan.cache.model_directory(name)
        directory.mkdir(parents=True, exist_ok=True)
        shutil.copy(CARRIED / f"{stem}.so", directory / f"stan_services_model_{name.split('/')[1]}{suffix}")
        (directory / "stderr.log").write_text(
            f"{CARRIED_MARK}built on {entry['built_on']} ({entry['compiler']}) as {entry['built_as']}, "
            "filed here by docker/gpu-stan-carried.py\n"
        )
        (directory / "stanc.log").write_text("")
        print(f"{stem}: filed as {name}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["pack"]:
        sys.exit(pack(sys.argv[2], sys.argv[3:]))
    if sys.argv[1:] == ["install"]:
        sys.exit(install())
    sys.exit(__doc__)
