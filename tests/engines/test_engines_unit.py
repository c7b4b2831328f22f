"""Engine internals that need no sampler run: Stan's elapsed-time report and the JAX compile clock."""

import pytest

from stanjax.models import ROOT
from stanjax.runner.engines.jax_setup import CompileClock
from stanjax.runner.engines.stan_output import _parse_elapsed


def test_stan_elapsed_time_report_is_parsed():
    output = (
        b'{"topic":"logger","values":["info: Elapsed Time: 0.125 seconds (Warm-up)"]}\n'
        b'{"topic":"logger","values":["info:                0.5 seconds (Sampling)"]}\n'
    )
    assert _parse_elapsed(output) == {"warmup": 0.125, "sampling": 0.5}


def test_compile_clock_counts_overlapping_spans_once():
    clock = object.__new__(CompileClock)
    clock.spans = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7)]
    assert clock.seconds() == 4.0


def test_every_registered_engine_resolves_without_importing_jax_for_stan():
    import importlib
    import subprocess
    import sys

    from stanjax.models import UsageError
    from stanjax.runner.core.engine_registry import ENGINES, find_bridgestan, find_cmdstan

    for entry in ENGINES.values():
        module, _, attribute = entry.factory.partition(":")
        assert callable(getattr(importlib.import_module(module), attribute)), entry.name
        assert entry.devices[0] == "cpu"
        if list(entry.front_ends) == ["cmdstan"] and find_cmdstan() is None:  # Stan's ADVI, Pathfinder: refused
            with pytest.raises(UsageError, match="run through CmdStan"):
                entry.front_end()
            continue
        if list(entry.front_ends) == ["bridgestan"] and find_bridgestan() is None:  # nutpie_stan: refused
            with pytest.raises(UsageError, match="no BridgeStan build is found"):
                entry.front_end()
            continue
        assert entry.front_end() in entry.front_ends
    probe = "import sys; from stanjax.runner.core.engine_registry import get_engine; get_engine('stan', 'bundled'); print('jaxlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "False"


def test_labels_name_front_end_device_precision_and_a_non_default_chain_method():
    from stanjax.runner.core.engine_registry import label

    assert label("stan", "bundled", "cpu", "float64", "parallel") == "Stan-CPU"
    assert label("stan", "cmdstan", "cpu", "float64", "parallel") == "CmdStan-CPU"
    assert label("numpyro", "numpyro", "cpu", "float64", "parallel") == "NumPyro-CPU"
    assert label("numpyro", "numpyro", "cpu", "float64", "vectorized") == "NumPyro-CPU-vectorized"
    assert label("numpyro", "numpyro", "gpu", "float32", "vectorized", "highest") == "NumPyro-GPU-f32"
    assert label("numpyro", "numpyro", "gpu", "float32", "vectorized", None) == "NumPyro-GPU-tf32"
    assert label("blackjax_chees", "blackjax", "cpu", "float64", "vectorized") == "BlackJAX-ChEES-CPU"
    assert label("future_engine", "x", "cpu", "float64", "parallel") == "future_engine[x]-CPU"  # never a crash


def test_the_device_policy_comes_from_the_registry():
    from stanjax.runner.core.config import Placement
    from stanjax.runner.core.engine_registry import ENGINES

    assert ENGINES["stan"].placement("gpu") == Placement("cpu", "float64", "parallel")  # the CPU baseline
    assert ENGINES["numpyro"].placement("gpu") == Placement("gpu", "float32", "vectorized")
    assert ENGINES["numpyro"].placement("gpu", x64=True) == Placement("gpu", "float64", "vectorized")
    assert ENGINES["numpyro"].placement("cpu", chain_method="sequential") == Placement("cpu", "float64", "sequential")
    assert ENGINES["blackjax_nuts"].placement("cpu", chain_method="parallel").chain_method == "vectorized"


def test_a_new_engine_needs_only_its_registry_entry_to_reach_the_report(monkeypatch, tmp_path):
    """Register an engine and relabel NumPyro's fixture runs as its runs: labels, headline pairing and claims
    follow from the entry alone (no label-prefix test anywhere decides what an engine is)."""
    import dataclasses
    import json

    from msgspec.structs import replace

    from stanjax.reports.build import build
    from stanjax.runner.core import engine_registry, records
    from stanjax.runner.core.run_measures import MachineLoad

    new = dataclasses.replace(
        engine_registry.ENGINES["numpyro"],
        name="fastjax",
        front_ends={"fastjax": "FastJAX"},
        factory="stanjax.runner.engines.numpyro:NumPyroEngine",
        order=-1,
    )
    monkeypatch.setitem(engine_registry.ENGINES, "fastjax", new)
    runs = records.read(ROOT / "tests" / "fixtures" / "tiny_repeats2.jsonl")
    quiet = MachineLoad(other_processes_cores=0.05, load_average_start=0.2, load_average_end=0.2, loaded=False)
    runs = [replace(r, load=quiet, isa="native") for r in runs]  # an answer takes clean runs only
    runs = [replace(r, engine="fastjax", front_end="fastjax") if r.engine == "numpyro" else r for r in runs]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(records.to_builtins(r)) + "\n" for r in runs))
    html = build(results, tmp_path / "report").read_text()
    assert (
        'data-numerator="FastJAX-CPU" data-denominator="httpstan-CPU"'
        in (tmp_path / "report" / "pairings.html").read_text()
    )
    assert "httpstan-CPU ÷ FastJAX-CPU in ESS/s" in html  # Maskell's httpstan-CPU vs JAX-CPU row found it by family


def test_stan_chains_faster_than_stans_clock_get_the_calls_wall_split_by_iterations():
    """Stan reports elapsed milliseconds: a one-parameter model's tiny run can read 0 for every chain (seen under
    `make test`: a ZeroDivisionError lost the run). The sampler time is then the call's wall, and says so."""
    from stanjax.runner.core.config import RunConfig
    from stanjax.runner.engines.stan_output import _stan_split

    zero = [{"warmup": 0.0, "sampling": 0.0}] * 4
    timings = _stan_split(zero, 0.06, 1.0, True, "httpstan", RunConfig(warmup=500, draws=1000))
    assert timings.sampler_s == pytest.approx(0.06) and timings.warmup_s == pytest.approx(0.02)
    assert "read 0 ms" in timings.source
    measured = _stan_split(
        [{"warmup": 0.2, "sampling": 0.6}, {"warmup": 0.1, "sampling": 0.3}], 1.0, 1.0, True, "httpstan", RunConfig()
    )
    assert measured.sampler_s == pytest.approx(0.8) and measured.warmup_s == pytest.approx(0.8 * 0.25)
