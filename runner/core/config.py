"""What one run is asked to do, and the hashes that identify it."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import asdict, dataclass, replace
from typing import NamedTuple

import numpy as np

# From MANY_CHAINS chains on, a run is "many short chains" (Margossian et al. 2024): its chains start in SUPERCHAINS
# groups, the chains of a group from one shared initial point, and nested R-hat judges it in place of R-hat.
MANY_CHAINS = 64
SUPERCHAINS = 16


@dataclass(frozen=True)
class RunConfig:
    """Sampler settings shared by every engine (Stan's defaults for NUTS with diagonal adaptation)."""

    size: str = "default"
    chains: int = 4
    warmup: int = 1000
    draws: int = 1000
    seed: int = 1
    target_accept: float = 0.8
    max_treedepth: int = 10
    # Chains start uniformly in (-init_radius, init_radius) on the unconstrained scale (Stan's init_radius, NumPyro's
    # init_to_uniform radius; 2 is both tools' default).
    init_radius: float = 2.0
    # Size entries that override the preset's (the data-size study), e.g. (("N", 30000),).
    resize: tuple[tuple[str, int], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "resize", tuple((str(k), int(v)) for k, v in self.resize))

    @property
    def superchains(self) -> int:
        """How many superchains the chains start in (chain c belongs to superchain c // (chains // superchains));
        0 below MANY_CHAINS chains, which each start from their own point and are judged by R-hat."""
        return SUPERCHAINS if self.chains >= MANY_CHAINS else 0

    def superchain_ids(self) -> list[int] | None:
        """Each chain's superchain, in the engines' chain order; None for a run without superchains."""
        if not self.superchains:
            return None
        return [chain // (self.chains // self.superchains) for chain in range(self.chains)]

    def for_model(self, spec) -> RunConfig:
        """These settings for runs of ``spec`` (a ModelSpec): with its own target acceptance and initial radius
        where it declares them, and at least the draws it declares for this size."""
        config = replace(self, target_accept=spec.target_accept) if spec.target_accept else self
        config = replace(config, init_radius=spec.init_radius) if spec.init_radius else config
        return replace(config, draws=max(config.draws, spec.min_draws.get(config.size, 0)))

    def as_dict(self) -> dict:
        """The settings; ``resize`` and ``init_radius`` only when not their defaults, so hashes of runs made before
        they were settings stay what they were."""
        settings = asdict(self)
        if not self.resize:
            del settings["resize"]
        if self.init_radius == RunConfig.init_radius:
            del settings["init_radius"]
        return settings

    def hash(self) -> str:
        """Identifies the settings (not the repeat): equal hashes mean comparable runs."""
        text = json.dumps(self.as_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def data_seed(self) -> int:
        """The data set depends on the seed only, so every engine and repeat sees the same data."""
        return self.seed

    def sampler_seed(self, repeat: int, entropy: int = 0) -> int:
        """A sampler seed (fits Stan's 31-bit seeds) from the seed, the repeat and a campaign's ``entropy``: two
        campaigns draw different entropy, so their repeats are independent runs, never the same draws twice.
        ``entropy`` 0 (a reference's fixed stream) gives the seed from the seed and the repeat alone."""
        words = [self.seed, repeat, *([entropy] if entropy else [])]
        return int(np.random.SeedSequence(words).generate_state(1)[0] % 2**31)


def campaign_entropy() -> int:
    """Fresh entropy for one campaign's sampler seeds (recorded in every run as its ``sampler_seed``)."""
    return secrets.randbits(64)


DEVICES = ("cpu", "gpu")
ISAS = ("native", "x86-64-v3", "x86-64-v2")
CHAIN_METHODS = ("parallel", "vectorized", "sequential")
# Stan's front end as asked: "auto" is CmdStan where one is installed, else the bundled Stan.
STAN_FRONT_ENDS = ("auto", "bundled", "cmdstan")


def blas_threads(cores: int, chains: int, chain_method: str) -> int:
    """OpenBLAS threads for a process whose chains share ``cores`` (0: all usable), set in its environment before
    scipy loads. XLA:CPU's LAPACK calls (Cholesky, triangular solves) go through scipy's OpenBLAS, two threads per
    call by default here: with four parallel chains on two cores a call stalled for milliseconds waiting for its
    second thread (GP regression: 2.9 ms per gradient, 0.38 with one thread; Stan 0.40)."""
    parallel = chains if chain_method == "parallel" else 1
    return max(1, (cores or os.cpu_count() or 1) // parallel)


@dataclass(frozen=True)
class Placement:
    """Where and how an engine runs. Stan: always CPU, float64, chains in parallel processes. JAX engines:
    ``device`` cpu|gpu, ``precision`` float64 (CPU default) or float32 (GPU default), ``chain_method``
    parallel (one device per chain), vectorized (one vmapped batch) or sequential; ``threads_per_chain``."""

    device: str = "cpu"
    precision: str = "float64"
    chain_method: str = "parallel"
    # Stan: threads each chain's gradient may use (>1: the model's reduce_sum program, each chain pinned to its
    # own cores). JAX engines: always 1 here; XLA's CPU threads are the run's cores (``Job.cores``).
    threads_per_chain: int = 1
    # The CPU instruction set both sides are built for (``ISAS``): "native", the host's (Stan with -march=native,
    # XLA's default), "x86-64-v3" (AVX2, no AVX-512) or "x86-64-v2" (SSE4.2, no AVX): runner/core/isa.py has the flags.
    isa: str = "native"
    # Stan: which of the model's programs runs and how stanc translates it (``STAN_PROGRAMS``): "" its own (for a
    # posteriordb posterior the one posteriordb publishes), "expert" its rewrite as a Stan expert writes it
    # (stan/expert/); "-O1" added ("O1", "expert-O1"): translated with stanc's optimiser. JAX engines: "".
    program: str = ""


# The Stan programs a model may have, as ``--stan-programs`` names them, and the Placement.program of each: the
# model's own or its expert rewrite, each translated by stanc as by default (--O0) or with its optimiser (--O1).
STAN_PROGRAMS = {"model": "", "expert": "expert", "model-O1": "O1", "expert-O1": "expert-O1"}


def is_expert(program: str) -> bool:
    """Whether a Placement.program is the model's expert rewrite (stan/expert/), whatever stanc's options."""
    return program.split("-")[0] == "expert"


def stanc_options(program: str) -> tuple[str, ...]:
    """The stanc options a Placement.program is translated with (none: stanc's default, --O0)."""
    return ("--O1",) if program.split("-")[-1] == "O1" else ()


class RunKey(NamedTuple):
    """What makes two runs the same measurement, repeat included: a run with an ok record of the same key is
    already done (``--resume``). Jobs and records build it here and nowhere else."""

    model_id: str
    engine: str
    front_end: str
    device: str
    precision: str
    chain_method: str
    threads_per_chain: int
    isa: str
    program: str
    cores: int
    config_hash: str
    repeat: int


@dataclass(frozen=True)
class Job:
    """One (model, engine through a front end, placement, repeat) run."""

    model_id: str
    engine: str
    config: RunConfig
    repeat: int = 0
    placement: Placement = Placement()
    front_end: str = ""
    entropy: int = 0  # the campaign's (``campaign_entropy``): with the seed and repeat it makes the sampler seed
    cores: int = 0  # CPU cores the worker is pinned to (the first usable ones); 0: all usable, unpinned
    # Where its cores start among the usable ones: streams that share a box (a GPU campaign's GPU and CPU lanes)
    # get disjoint cores. Not part of the key: which cores, not how many, changes nothing a run measures.
    first_core: int = 0

    @property
    def device(self) -> str:
        return self.placement.device

    def label(self) -> str:
        resized = "".join(f" {name}={value}" for name, value in self.config.resize)
        threads = f" x {self.placement.threads_per_chain} threads" if self.placement.threads_per_chain > 1 else ""
        threads += f" · {self.placement.program} program" if self.placement.program else ""
        threads += " · through CmdStan" if self.through_cmdstan else ""
        return (
            f"{self.model_id}{resized} · {self.engine}-{self.device} · {self.config.chains} chains{threads} · "
            f"block {self.block + 1}"
        )

    def log_name(self) -> str:
        """The file name of the worker's log: one per run of a campaign."""
        program = f"-{self.placement.program}" if self.placement.program else ""
        program += "-cmdstan" if self.through_cmdstan else ""
        return f"{self.model_id}.{self.engine}-{self.device}{program}.{self.config.hash()}.{self.repeat}.log"

    @property
    def through_cmdstan(self) -> bool:
        """Stan's NUTS through CmdStan, which may run beside the bundled Stan's in one block (``--stan
        bundled,cmdstan``): named in the run's line and log."""
        return self.engine == "stan" and self.front_end == "cmdstan"

    def blas_threads(self) -> int:
        """OpenBLAS threads for the worker (``blas_threads``)."""
        return blas_threads(self.cores, self.config.chains, self.placement.chain_method)

    @property
    def sampler_seed(self) -> int:
        return self.config.sampler_seed(self.repeat, self.entropy)

    @property
    def block(self) -> int:
        """The paired block the run belongs to: a block runs every engine setup of one (model, size, settings)
        once, back to back, and a ratio is taken within a block. Repeat r of every setup is block r."""
        return self.repeat

    def pairing(self, campaign_id: str) -> str:
        """Names the runs that pair up block by block: one campaign's runs of one model at one size with the same
        settings and data seed, built for one ISA (every engine setup of them, on whichever cores each lane had)."""
        text = json.dumps([campaign_id, self.model_id, self.config.hash(), self.placement.isa])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def key(self) -> RunKey:
        return RunKey(
            model_id=self.model_id,
            engine=self.engine,
            front_end=self.front_end,
            device=self.placement.device,
            precision=self.placement.precision,
            chain_method=self.placement.chain_method,
            threads_per_chain=self.placement.threads_per_chain,
            isa=self.placement.isa,
            program=self.placement.program,
            cores=self.cores,
            config_hash=self.config.hash(),
            repeat=self.repeat,
        )

    def as_dict(self) -> dict:
        return {
            "model_id": self.model_id,
            "engine": self.engine,
            "front_end": self.front_end,
            **asdict(self.placement),
            "repeat": self.repeat,
            "config": self.config.as_dict(),
            "entropy": self.entropy,
            "cores": self.cores,
            "first_core": self.first_core,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Job:
        placement = Placement(
            **{k: d[k] for k in ("device", "precision", "chain_method", "threads_per_chain")},
            isa=d.get("isa", "native"),
            program=d.get("program", ""),
        )
        return cls(
            d["model_id"],
            d["engine"],
            RunConfig(**d["config"]),
            d["repeat"],
            placement,
            d["front_end"],
            d["entropy"],
            d["cores"],
            d.get("first_core", 0),
        )
