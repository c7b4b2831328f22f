"""Bundled Stan (and pystan, for comparison) run in a fresh child process that never imports JAX.

The bundled Stan engine forks a process per chain, and so does pystan; a process that has loaded JAX must not fork
(the engine refuses to). The pytest process has usually loaded JAX by then (other tests run NumPyro), so tests
that sample with Stan in-process do it here: ``sample(...)`` runs ``python -m tests.stan_child`` under the
workers' interpreter (httpstan's cache key includes its path) and returns what it sampled, plus whether jaxlib
was ever imported in that child.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stanjax.models import ROOT
from stanjax.runner.core.config import RunConfig
from stanjax.runner.measure.jobs import WORKER_PYTHON


@dataclass
class PystanFit:
    """What the tests read of a pystan fit: ``fit[name]`` (``(*shape, draws * chains)``), names and dims."""

    param_names: tuple[str, ...]
    dims: list[list[int]]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]


@dataclass
class ChildResult:
    ours: object | None  # the bundled engine's SampleResult
    error: tuple[str, str] | None  # (exception type, message) the bundled engine raised
    pystan: PystanFit | None
    jaxlib_imported: bool  # by the end of the child
    output: str = ""  # the child's stdout and stderr


def sample(
    model_id: str, data: dict, config: RunConfig, seed: int, with_pystan: bool = False, timeout_s: float = 600
) -> ChildResult:
    """Compile (cached) and sample ``model_id`` with the bundled Stan engine in a child process; with
    ``with_pystan``, also pystan's ``stan.build(...).sample(...)`` with the same seed and settings."""
    with tempfile.TemporaryDirectory(prefix="stanjax-stan-child-") as folder:
        request, result = Path(folder) / "request.pkl", Path(folder) / "result.pkl"
        request.write_bytes(
            pickle.dumps(
                {"model_id": model_id, "data": data, "config": config, "seed": seed, "with_pystan": with_pystan}
            )
        )
        done = subprocess.run(
            [WORKER_PYTHON, "-m", "tests.stan_child", str(request), str(result)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=timeout_s,
        )
        if done.returncode != 0 or not result.exists():
            raise AssertionError(f"the Stan child process failed (exit {done.returncode}):\n{done.stdout[-6000:]}")
        found = pickle.loads(result.read_bytes())
    found.output = done.stdout
    return found


def _child(request_path: Path, result_path: Path) -> None:
    from stanjax import models
    from stanjax.runner.engines.stan_bundled import HttpstanBackend

    request = pickle.loads(request_path.read_bytes())
    spec, config, seed, data = models.get(request["model_id"]), request["config"], request["seed"], request["data"]
    backend = HttpstanBackend()
    ours = error = fit = None
    handle = backend.compile(spec.stan_file)
    try:
        ours = backend.sample(handle, data, config, seed)
    except Exception as err:  # the caller checks what was raised
        error = (type(err).__name__, str(err))
    if request["with_pystan"]:
        import stan

        # the same module (its program text, with the build's comment, finds it in httpstan's cache)
        posterior = stan.build(handle["program_code"], data=data, random_seed=seed)
        stan_fit = posterior.sample(
            num_chains=config.chains,
            num_warmup=config.warmup,
            num_samples=config.draws,
            delta=config.target_accept,
            max_depth=config.max_treedepth,
        )
        names = [
            *stan_fit.param_names,
            *(name for name in stan_fit.sample_and_sampler_param_names if name.endswith("__")),
        ]
        fit = PystanFit(
            tuple(stan_fit.param_names),
            [list(d) for d in stan_fit.dims],
            {name: np.asarray(stan_fit[name]) for name in names},
        )
    result = ChildResult(ours, error, fit, "jaxlib" in sys.modules)
    result_path.write_bytes(pickle.dumps(result))


if __name__ == "__main__":
    from tests.stan_child import _child as child  # its classes pickled as tests.stan_child's, not __main__'s

    child(*map(Path, sys.argv[1:]))
