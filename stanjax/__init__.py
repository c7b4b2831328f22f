"""stanjax: paired Stan and NumPyro/JAX benchmarks, as a library.

From a notebook::

    import stanjax as sj
    p = sj.posterior("eight_schools-eight_schools_noncentered")   # data, both programs, reference, sizes
    run = sj.sample(p, engine="numpyro", size="tiny", chains=2)   # any engine of the registry
    run.to_inference_data(); run.ess_per_second; run.record        # arviz's DataTree, metrics, the RunRecord
    sj.compare(p, engines=["stan", "numpyro"], blocks=5)           # a paired comparison with its interval
    sj.check("model.stan", "model.py", data="d.json")              # the check verb's result object
    sj.load("results/")                                            # records as a pandas DataFrame
    sj.report("results/", out="report/")

Runs go through the same planning, worker processes, gates and records as ``stanjax run`` (the CLI calls these
parts too): a run's record lands in ``out``'s results.jsonl like any other, so nothing measured is lost. Bad
arguments are refused in this API's words (``chains must be between 1 and 65536, got 0``) before anything runs;
what ``sample`` and ``compare`` give back is ``stanjax.runs``'s.

The library's parts keep the design card's folders: ``stanjax.models`` (posterior specs), ``stanjax.jax_models``
(the NumPyro programs), ``stanjax.runner`` (engines, measurement, campaigns, the CLI) and ``stanjax.reports``; the
Stan programs and references travel with them as package data. In a checkout, this folder holds links to those
folders (``models -> ../models``, ...), so the checkout is the package: importable from its root as it is, and
installed in place by ``make install`` (a strict editable install: one tree that type checkers and IDEs read).
Nothing heavy is imported at ``import stanjax``: a Stan worker imports it and must not load JAX.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stanjax.runs import Comparison, Run

if TYPE_CHECKING:
    import pandas as pd

    from stanjax.models import ModelSpec
    from stanjax.runner.pairing.check_result import CheckResult

__all__ = ["Comparison", "Posterior", "Run", "check", "compare", "load", "posterior", "report", "sample"]


@dataclass(frozen=True)
class Posterior:
    """A posterior of the zoo (or of a model folder of yours): its spec, both programs, its data and references."""

    spec: ModelSpec

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def title(self) -> str:
        return self.spec.title or self.spec.id

    @property
    def sizes(self) -> dict[str, dict[str, int]]:
        """Size presets: name -> the generator's sizes."""
        return self.spec.sizes

    @property
    def parameters(self) -> list[str]:
        return [parameter.name for parameter in self.spec.summarised]

    @property
    def stan_file(self) -> Path:
        return self.spec.stan_file

    @property
    def stan_code(self) -> str:
        return self.spec.stan_file.read_text()

    @property
    def numpyro_model(self):
        """The NumPyro model: a function of the data dict's entries (observations default to None)."""
        from stanjax import jax_models

        return jax_models.load(self.spec.jax_file)

    def data(self, size: str = "default", seed: int = 1) -> dict:
        """The data set both programs take (the Stan data block's entries), made by the seeded generator."""
        return self.spec.data(size, seed)

    def reference(self, size: str = "default", seed: int = 1) -> dict | None:
        """The reference posterior the gates compare a run with at this size (an outside truth where the model has
        one: inference-gym's, posteriordb's), or None; its ``header`` says how it was made."""
        from stanjax import models
        from stanjax.runner.measure import references

        return references.applicable(self.id, size, (), models.data_hash(self.data(size, seed)))[0]


def posterior(posterior_id: str, model_dir: str | Path | None = None) -> Posterior:
    """A posterior of the zoo: its spec, both programs, data generator and references.

    Parameters
    ----------
    posterior_id
        The posterior's ID, e.g. ``"eight_schools-eight_schools_noncentered"`` (``stanjax run --help`` lists them).
    model_dir
        A folder of your own models, laid out as this repository's; it joins the registry first.

    Returns
    -------
    Posterior
        What ``sample``, ``compare`` and ``check`` take.

    Raises
    ------
    UsageError
        An unknown ID, with the nearest ones."""
    from stanjax import models

    if model_dir is not None:
        models.add_model_dir(Path(model_dir))
    return Posterior(models.get(posterior_id))


def _plan(posterior: Posterior | str, engines: list[str], **settings) -> list:
    """The run verb's plan for one posterior (``settings``: a ``Request``'s), whose refusals name this API's
    arguments (``chains``, not ``--chains``): one line before anything runs."""
    from stanjax.models import argument_names
    from stanjax.runner.measure.plan import Request, plan

    model_id = posterior.id if isinstance(posterior, Posterior) else posterior
    with argument_names():
        return plan(Request(models=[model_id], engines=engines, **settings))


def sample(
    posterior: Posterior | str,
    engine: str = "numpyro",
    size: str = "default",
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int = 1,
    device: str = "cpu",
    chain_method: str | None = None,
    stan: str = "auto",
    out: str | Path = "out/results",
    timeout: float = 3600.0,
    wait: bool = False,
) -> Run:
    """Sample a posterior once in a worker process, as ``stanjax run`` does: the same planning, gates and record.

    Parameters
    ----------
    posterior
        A ``Posterior`` or its ID.
    engine
        stan, numpyro, blackjax_nuts, blackjax_chees, nutpie_stan (where a BridgeStan build is found: BRIDGESTAN),
        nutpie_jax; or an approximate engine, whose warmup is its training steps
        or iterations: flow_realnvp, flow_maf, advi_meanfield, advi_fullrank, pathfinder, and Stan's through
        CmdStan, stan_advi_meanfield, stan_advi_fullrank, stan_pathfinder.
    size
        The data size preset (the posterior's ``sizes``).
    chains, warmup, draws
        Chains, and iterations a chain.
    seed
        The data seed; the sampler's seed comes from it and fresh entropy, and is recorded.
    device
        ``"cpu"`` or ``"gpu"`` (JAX engines).
    chain_method
        How NumPyro runs the chains: ``"parallel"`` (one CPU device each, at most 64), ``"vectorized"`` or
        ``"sequential"``; None: the device's default (parallel on the CPU, vectorized on a GPU).
    stan
        Stan's front end: ``"auto"``, ``"bundled"`` or ``"cmdstan"``.
    out
        The results folder: the run's record is appended to its ``results.jsonl``.
    timeout
        Seconds before the worker is stopped.
    wait
        Where another process writes into ``out`` (a campaign; ``out/.stanjax.lock`` names it), wait until it has
        finished; else a UsageError names it.

    Returns
    -------
    Run
        The record (timings, metrics, gates, provenance) and the draws.

    Raises
    ------
    UsageError
        An argument out of its range, an unknown posterior, engine or size (the nearest named), or an ``out`` that
        cannot take results or is in use, before it runs.
    RuntimeError
        A run that failed or timed out, with the worker's last lines (its record is kept)."""
    import numpy as np

    from stanjax.models import argument_names
    from stanjax.runner.core import folder_lock
    from stanjax.runner.measure.jobs import Recorder

    folder_lock.check(out)
    [job] = _plan(
        posterior,
        [engine],
        size=size,
        chains=chains,
        warmup=warmup,
        draws=draws,
        repeats=1,
        seed=seed,
        device=device,
        chain_method=chain_method,
        stan=stan,
        timeout=timeout,
    )
    with (
        argument_names(),
        folder_lock.held(out, wait) as folder,
        tempfile.TemporaryDirectory(prefix="stanjax-draws-") as tmp,
    ):
        recorder = Recorder(folder, timeout, [])
        draws_file = Path(tmp) / "draws.npz"
        record = recorder.run(job, draws_file=draws_file)
        if record.status != "ok":
            raise RuntimeError(f"{job.label()}: {record.status}: {record.error}")
        with np.load(draws_file) as saved:
            groups: dict[str, dict] = {"posterior": {}, "sample_stats": {}}
            for key in saved.files:
                group, _, name = key.partition("/")
                groups[group][name] = saved[key]
    return Run(record, groups["posterior"], groups["sample_stats"])


def compare(
    posterior: Posterior | str,
    engines: tuple[str, str] | list[str] = ("stan", "numpyro"),
    blocks: int = 5,
    size: str = "default",
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int = 1,
    device: str = "cpu",
    chain_method: str | None = None,
    stan: str = "auto",
    out: str | Path = "out/results",
    timeout: float = 3600.0,
    reruns: int = 2,
    wait: bool = False,
) -> Comparison:
    """Paired blocks of two engines on one posterior (each both engines back to back, their order alternating, as
    ``stanjax run --repeats`` runs them), and their ESS/s ratio as the report takes it.

    Parameters
    ----------
    posterior
        A ``Posterior`` or its ID.
    engines
        (denominator, numerator): two engines; the ratio is the second's ESS/s over the first's.
    blocks
        Paired blocks; under 5 valid ones the comparison is ``insufficient``.
    size, chains, warmup, draws, seed, device, chain_method, stan, out, timeout, wait
        As for ``sample``.
    reruns
        How often a run measured on a loaded machine is run again (a loaded record never enters the ratio).

    Returns
    -------
    Comparison
        The median block ratio with its order-statistic interval (None without a valid pair), why there is none or
        too few blocks for one, and every record.

    Raises
    ------
    UsageError
        Not two engines, an argument out of range, an unknown posterior, engine or size (the nearest named), or an
        ``out`` that cannot take results or is in use."""
    from stanjax.models import UsageError, argument_names
    from stanjax.reports.headline import comparisons, why_no_ratio
    from stanjax.reports.runs_table import tidy
    from stanjax.runner.core import folder_lock
    from stanjax.runner.measure.jobs import run_jobs

    folder_lock.check(out)
    names = [engines] if isinstance(engines, str) else list(dict.fromkeys(engines))
    if len(names) != 2:
        raise UsageError(f"engines must be two engines, the denominator and the numerator, got {engines!r}")
    jobs = _plan(
        posterior,
        names,
        size=size,
        chains=chains,
        warmup=warmup,
        draws=draws,
        repeats=blocks,
        seed=seed,
        device=device,
        chain_method=chain_method,
        stan=stan,
        timeout=timeout,
        reruns=reruns,
    )
    written: list = []
    with argument_names(), folder_lock.held(out, wait) as folder:
        run_jobs(jobs, folder, timeout, written, reruns=reruns, quiet_wait_s=120.0 if reruns else 0.0)
    runs = tidy(written)
    entry = next((c for c in comparisons(runs) if len(c["models"]) == 1), None) if runs.valid.any() else None
    labels = list(dict.fromkeys(r.label for r in written))  # block 0 runs the engines as given
    ratio = entry["models"][0]["warm"] if entry else None
    why = why_no_ratio(runs, labels, blocks, ratio.blocks if ratio else 0)
    num, den = (entry["numerator"], entry["denominator"]) if entry else (labels[-1], labels[0])
    return Comparison(jobs[0].model_id, num, den, ratio, why, written)


def check(*target: str | Path, data: str | Path | None = None, **options) -> CheckResult:
    """``stanjax check`` as a function: do a Stan program and a NumPyro model target the same posterior?

    Parameters
    ----------
    target
        ``"model.stan", "model.py"`` (a pair of files), or a posterior's ID.
    data
        A JSON data file for a pair of files.
    options
        The verb's: size, seed, points, chains, warmup, draws, repeats, timeout, budget, reference, stop_after, out,
        model_dir, wait, engines (the pair, and nutpie_stan, nutpie_jax beside it).

    Returns
    -------
    CheckResult
        Each stage's outcome, the verdict (``exit_code`` as the CLI's), the short run's records and rows, and the
        speed ratio."""
    import dataclasses

    from stanjax.models import UnknownChoice, argument_names
    from stanjax.runner.pairing.check import check as run_check
    from stanjax.runner.pairing.pair_files import CheckRequest

    known = [f.name for f in dataclasses.fields(CheckRequest) if f.name not in ("target", "data")]
    for name in options:
        if name not in known:
            raise UnknownChoice("option", name, known)
    paths = {
        key: Path(value)
        for key, value in options.items()
        if key in ("reference", "out", "model_dir") and value is not None
    }
    request = CheckRequest(
        [str(t) for t in target], data=Path(data) if data is not None else None, **{**options, **paths}
    )
    with argument_names():  # refusals name this function's arguments (data, points), not the verb's flags
        return run_check(request)


def load(results: str | Path | list[str | Path]) -> pd.DataFrame:
    """Records as a table, one row a run.

    Parameters
    ----------
    results
        results.jsonl files (plain, or packed as a closed campaign's), folders searched for them, or a list of both.

    Returns
    -------
    pandas.DataFrame
        Identity, engine setup, sizes, status and gates, timings, metrics, energy, and whether an answer may use
        the run (loaded, superseded).

    Raises
    ------
    RecordsError
        No records there."""
    from stanjax.reports.runs_table import tidy
    from stanjax.runner.core import records

    paths = [Path(p) for p in results] if isinstance(results, list) else Path(results)
    found = records.independent(records.read(paths))
    if not found:
        raise records.RecordsError(f"no records in {results}")
    return tidy(found)


def report(results: str | Path | list[str | Path], out: str | Path = "out/report") -> Path:
    """The HTML report of the records in ``results``.

    Parameters
    ----------
    results
        As for ``load``.
    out
        The folder it is written into: index.html, figures.html, models/, README.md, runs.csv.gz, summary.json.

    Returns
    -------
    pathlib.Path
        The path of index.html."""
    from stanjax.reports.build import build

    paths = [Path(p) for p in results] if isinstance(results, list) else Path(results)
    return build(paths, Path(out))
