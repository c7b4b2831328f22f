"""Stan's log density and gradient timed in a compiled loop, as JAX's is
(:mod:`stanjax.runner.measure.gradient_clocks`): a small C++ driver that includes stanc's C++ of the program, reads
the data (Stan JSON), builds the model once and times ``stan::model::log_prob_grad<true, true>`` (propto and
Jacobian, as the sampler calls it) in a loop, with no Python and no sampler between calls; one JSON line out.

Built by the bundled Stan's own toolchain (:func:`stan_build.compile_args`: httpstan's headers, its stanc, TBB and
SUNDIALS, the ISA's flags, ``STAN_THREADS`` only where the program threads; Stan's header precompiled for the build
where ``stan_build.precompile_header`` made one), so the loop's gradient is the sampler's to the instruction, and
cached in the project's cache, keyed on the driver, the program, stanc's options, the compile command and the
compiler's version.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stanjax.runner.core.paths import cache_dir
from stanjax.runner.engines import stan_build
from stanjax.runner.engines.stanc import translate

MODEL_NAME = "stanjax_loop"  # stanc's --name for the driver's model
CACHE_FOLDER = "stan-loop"
LIBRARIES = ("sundials_cvodes", "sundials_idas", "sundials_nvecserial", "tbb")  # httpstan's, linked as it links

# The driver, after stanc's model C++ (model.hpp). Arguments: the data and the point (Stan JSON; the point on the
# constrained scale, unconstrained here by the model's own transforms), then either "check" (the log density,
# unconstrained point and gradient there) or the loop's repeats, least seconds, most repeats, timings, tries and
# TBB threads. Each gradient is taken at the start moved by 1e-9 times the last gradient, as JAX's loop moves its
# point (an O(parameters) vector update a step, as a leapfrog step's). The loop is lengthened, as JAX's, until the
# fastest of three takes the least seconds; each try a fresh model (its data copied anew) and point, the first's
# loop run once untimed; a try's cost is the median of the timings.
DRIVER = r"""
#include <stan/io/json/json_data.hpp>
#include <stan/model/log_prob_grad.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {
stan::json::json_data read_json(const char* path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("cannot read ") + path);
  return stan::json::json_data(in);
}

struct Loop {
  std::unique_ptr<stan::model::model_base> model;
  Eigen::VectorXd start, z, gradient;
  double total = 0;

  Loop(stan::io::var_context& data, stan::io::var_context& point)
      : model(&new_model(data, 0, nullptr)) {
    model->transform_inits(point, start, nullptr);
    z = start;
    gradient.resize(start.size());
  }

  double at_start() {
    z = start;
    return stan::model::log_prob_grad<true, true>(*model, z, gradient, nullptr);
  }

  double seconds(long repeats) {
    auto begin = std::chrono::steady_clock::now();
    for (long i = 0; i < repeats; ++i) {
      total += stan::model::log_prob_grad<true, true>(*model, z, gradient, nullptr);
      z = start - 1e-9 * gradient;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  }
};

void print_vector(const char* name, const Eigen::VectorXd& v) {
  std::printf("\"%s\": [", name);
  for (Eigen::Index i = 0; i < v.size(); ++i) std::printf("%s%.17g", i ? ", " : "", v[i]);
  std::printf("]");
}
}  // namespace

int main(int argc, char** argv) {
  try {
    stan::json::json_data data = read_json(argv[1]), point = read_json(argv[2]);
    if (argc == 4 && std::string(argv[3]) == "check") {
      Loop loop(data, point);
      double log_density = loop.at_start();
      std::printf("{\"log_density\": %.17g, ", log_density);
      print_vector("unconstrained", loop.start);
      std::printf(", ");
      print_vector("gradient", loop.gradient);
      std::printf("}\n");
      return 0;
    }
    if (argc != 9)
      throw std::runtime_error("usage: driver DATA POINT (check | REPEATS MIN_S MOST TIMINGS TRIES THREADS)");
    long repeats = std::stol(argv[3]), most = std::stol(argv[5]);
    double least_s = std::stod(argv[4]);
    int timings = std::stoi(argv[6]), tries = std::stoi(argv[7]);
#ifdef STAN_THREADS
    stan::math::init_threadpool_tbb(std::stoi(argv[8]));
#endif
    std::vector<double> tries_ms;
    double log_density = 0, total = 0;
    for (int t = 0; t < tries; ++t) {
      Loop loop(data, point);
      log_density = loop.at_start();
      loop.seconds(repeats);  // the first loop carries one-time costs
      while (t == 0 && least_s > 0 && repeats < most) {
        double fastest = std::min({loop.seconds(repeats), loop.seconds(repeats), loop.seconds(repeats)});
        if (fastest >= least_s) break;
        repeats = std::min(most, long(repeats * 1.5 * least_s / std::max(fastest, 1e-6)) + 1);
        loop.seconds(repeats);
      }
      std::vector<double> ms;
      for (int i = 0; i < timings; ++i) ms.push_back(loop.seconds(repeats) / repeats * 1e3);
      std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
      tries_ms.push_back(ms[ms.size() / 2]);
      total += loop.total;
    }
    std::printf("{\"repeats\": %ld, \"log_density\": %.17g, \"total\": %.17g, \"tries_ms\": [", repeats,
                log_density, total);
    for (size_t i = 0; i < tries_ms.size(); ++i) std::printf("%s%.17g", i ? ", " : "", tries_ms[i]);
    std::printf("]}\n");
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::fprintf(stderr, "%s\n", what.c_str());
    return 1;
  }
  return 0;
}
"""


@dataclass(frozen=True)
class Driver:
    """A built driver: its executable, the program it runs, whether it was found in the cache, the seconds it took."""

    path: Path
    program: str
    cached: bool
    compile_s: float


@dataclass(frozen=True)
class AtPoint:
    """The driver's log density (propto, Jacobian) at a point, the point on Stan's unconstrained scale, the gradient."""

    log_density: float
    unconstrained: np.ndarray
    gradient: np.ndarray


@dataclass(frozen=True)
class Timed:
    """A loop's ms per gradient (the fastest try's median), each try's, its gradients, the start's log density."""

    ms_per_gradient: float
    tries_ms: list[float]
    repeats: int
    log_density: float


def build(stan_file: Path, isa: str = "native", stanc_options: tuple[str, ...] = ()) -> Driver:
    """The driver of ``stan_file`` for ``isa`` (stanc's ``stanc_options`` added), built once per content and kept in
    the project's cache; a build that fails is one line naming the program. One process at a time builds one."""
    import httpstan

    code = stan_file.read_text()
    threads = stan_build.uses_threads(code)
    command = stan_build.compile_args(isa, threads)
    version = subprocess.run([command[0], "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(
        "\n".join([DRIVER, code, *stanc_options, *command, version, httpstan.__version__]).encode()
    ).hexdigest()[:16]
    folder = cache_dir() / CACHE_FOLDER / f"{stan_file.stem}-{key}"
    start = time.perf_counter()
    with stan_build.building(f"{CACHE_FOLDER}-{folder.name}"):
        cached = (folder / "driver").exists()
        if not cached:
            _compile(stan_file, code, stanc_options, [*command, *stan_build.header_flags(isa, threads).split()], folder)
    return Driver(folder / "driver", stan_file.name, cached, time.perf_counter() - start)


def _compile(stan_file: Path, code: str, stanc_options: tuple[str, ...], command: list[str], folder: Path) -> None:
    import httpstan

    package = Path(httpstan.__file__).parent
    if not (package / "include" / "stan" / "model").is_dir():
        raise RuntimeError(f"{stan_file.name}: this httpstan has no C++ headers (a slimmed wheel) to build its loop")
    try:
        cpp, _ = translate(code, MODEL_NAME, stanc_options)
    except ValueError as err:
        raise RuntimeError(f"{stan_file.name} failed to translate: {' '.join(str(err).split())[:300]}") from None
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as build_dir:
        source = Path(build_dir) / "driver.cpp"
        (Path(build_dir) / "model.hpp").write_text(cpp)
        source.write_text(f'#include "model.hpp"\n{DRIVER}')
        lib = package / "lib"
        links = [f"-L{lib}", *(f"-l{name}" for name in LIBRARIES), f"-Wl,-rpath,{lib}"]
        done = subprocess.run(
            [*command, str(source), "-o", f"{build_dir}/driver", *links],
            capture_output=True,
            text=True,
            errors="replace",
        )
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines()[-1:]
            raise RuntimeError(f"{stan_file.name}: its gradient loop failed to build: {' '.join(errors[:1])[:300]}")
        os.replace(f"{build_dir}/driver", folder / "driver")  # whole or not at all: a killed build leaves none


def _run(driver: Driver, data: dict, point: dict, args: list[str], timeout_s: float) -> dict:
    """The driver run on ``data`` and the constrained ``point``, written as Stan JSON; its JSON line."""
    from cmdstanpy import write_stan_json

    with tempfile.TemporaryDirectory(prefix="stanjax-loop-") as folder:
        write_stan_json(f"{folder}/data.json", data)
        write_stan_json(f"{folder}/point.json", point)
        done = subprocess.run(
            [str(driver.path), f"{folder}/data.json", f"{folder}/point.json", *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{driver.program}'s gradient loop failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def at_point(driver: Driver, data: dict, point: dict, timeout_s: float = 300) -> AtPoint:
    """The log density and its gradient at ``point`` (constrained values by name), as the loop computes them."""
    found = _run(driver, data, point, ["check"], timeout_s)
    return AtPoint(found["log_density"], np.asarray(found["unconstrained"]), np.asarray(found["gradient"]))


def timed(
    driver: Driver,
    data: dict,
    point: dict,
    repeats: int,
    least_s: float,
    most: int,
    timings: int,
    tries: int = 1,
    threads: int = 1,
    timeout_s: float = 900,
) -> Timed:
    """ms per gradient in the driver's loop at ``point``: ``repeats`` a loop, more (up to ``most``) until one takes
    ``least_s`` (0: exactly ``repeats``), the median of ``timings`` loops, the fastest of ``tries``; ``threads``:
    TBB's, for a program that threads."""
    args = [str(repeats), repr(least_s), str(most), str(timings), str(tries), str(threads)]
    found = _run(driver, data, point, args, timeout_s)
    return Timed(min(found["tries_ms"]), found["tries_ms"], found["repeats"], found["log_density"])
