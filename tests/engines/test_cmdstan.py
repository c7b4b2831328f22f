"""CmdStan through cmdstanpy, run when a CmdStan installation is found (``CMDSTAN`` or cmdstanpy's default
folder) and skipped, with the reason, where none is (as in CI). The strongest check two Stan front ends can have:
the same seed gives the same draws, model by model."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from stanjax import models
from stanjax.runner.core import isa
from stanjax.runner.core.config import ISAS, RunConfig
from stanjax.runner.core.engine_registry import find_cmdstan
from stanjax.runner.engines.stan_bundled import HttpstanBackend
from stanjax.runner.engines.stan_cmdstan import CmdStanBackend
from tests import stan_child
from tests.core.test_isa import AVX, EIGHT_SCHOOLS, HOST_HAS_AVX2

CMDSTAN = find_cmdstan()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.stan,
    pytest.mark.skipif(
        CMDSTAN is None, reason="no CmdStan found: set CMDSTAN to a CmdStan installation to run the cmdstanpy tests"
    ),
]
CONFIG = RunConfig(size="tiny", chains=2, warmup=150, draws=100)
SEED = 12345


@pytest.fixture(scope="module")
def backends():
    return HttpstanBackend(), CmdStanBackend(CMDSTAN)


def test_cmdstan_info_names_the_interface_and_its_stan(backends):
    _, cmdstan = backends
    info = cmdstan.info()
    assert info["stan_interface"] == "cmdstanpy" and info["cmdstan_path"] == CMDSTAN
    assert info["stan_version"].count(".") == 2


def nuts_avx_instructions(executable: Path) -> int:
    """How many of the AVX instructions in ``executable``'s disassembly lie in NUTS (``base_nuts``' functions:
    transition, build_tree), which CmdStan links from its main object, not from the model's."""
    listing = subprocess.run(
        ["objdump", "-d", "-C", "--no-show-raw-insn", str(executable)], capture_output=True, text=True, check=True
    ).stdout
    functions = [block for block in listing.split("\n\n") if "base_nuts<" in block.split("\n", 1)[0]]
    assert functions, f"no NUTS function in {executable}'s disassembly"
    return sum(len(AVX.findall(block)) for block in functions)


def test_cmdstans_nuts_is_built_for_the_programs_isa(backends):
    """CmdStan links every model with a main object holding NUTS; the one ``make build`` made has CmdStan's
    flags whatever CXXFLAGS_OPTIM the model gets, and a -march=native Bradley-Terry linked with it died with
    "double free or corruption" (Eigen's alignment differs between the halves). Each ISA gets its own."""
    _, cmdstan = backends
    found = {}
    for build in ISAS:
        handle = cmdstan.compile(EIGHT_SCHOOLS.stan_file, build)
        found[build] = nuts_avx_instructions(Path(handle["model"].exe_file))
    assert found["x86-64-v2"] == 0, found
    if not HOST_HAS_AVX2:
        pytest.skip(f"this host has no AVX2 (/proc/cpuinfo: {isa.host_features()}): -march=native adds no AVX")
    assert found["native"] > 0, found


@pytest.mark.parametrize("model_id", sorted(models.registry()))
def test_same_seed_gives_the_same_draws_through_bundled_stan_and_cmdstanpy(backends, model_id):
    bundled_stan, cmdstan = backends
    versions = bundled_stan.info()["stan_version"], cmdstan.info()["stan_version"]
    if versions[0] != versions[1]:
        pytest.skip(f"different Stan libraries (bundled {versions[0]}, CmdStan {versions[1]}): draws may differ")
    spec = models.get(model_id)
    data = spec.data(CONFIG.size, CONFIG.data_seed())
    child = stan_child.sample(model_id, data, CONFIG, SEED)  # forks chains: never from this (JAX) process
    assert child.error is None, child.error
    bundled = child.ours
    cmd = cmdstan.sample(cmdstan.compile(spec.stan_file), data, CONFIG, SEED)
    # Same trajectories: every draw took the same number of leapfrog steps, chain by chain.
    np.testing.assert_array_equal(bundled.stats.n_leapfrog, cmd.stats.n_leapfrog)
    assert bundled.draws.keys() == cmd.draws.keys()
    for name, values in bundled.draws.items():
        # CmdStan's CSV keeps 6 significant digits (cmdstanpy's default): equal to that precision.
        np.testing.assert_allclose(cmd.draws[name], values, rtol=1e-5, atol=1e-8, err_msg=name)


def test_the_stan_engine_runs_through_cmdstanpy_end_to_end(tmp_path):
    from stanjax.runner.commands.cli import main
    from stanjax.runner.core import records

    assert (
        main(
            [
                "run",
                "--suite",
                "tiny",
                "--models",
                "eight_schools-eight_schools_noncentered",
                "--engines",
                "stan",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    [record] = records.read(tmp_path)
    assert record.front_end == "cmdstan" and record.engine_info["stan_interface"] == "cmdstanpy" and record.valid
    timings = record.timings
    assert timings.warmup_s > 0 and timings.sampling_s > 0
    assert len(timings.detail["chain_warmup_s"]) == 4  # CmdStan's own elapsed-time block, per chain
