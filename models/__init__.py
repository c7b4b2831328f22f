"""Model registry: one posterior ID (posteriordb's ``<data>-<model>``) per file in this folder.

Each ``models/<id>.py`` defines ``SPEC``: a :class:`ModelSpec` naming the parameters (with shapes written in
terms of the data block's sizes), the size presets and a seeded ``generate(seed, **sizes) -> dict`` whose keys
are exactly the Stan data block. The Stan program is ``stan/<model>.stan`` and the NumPyro model is
``jax_models/<model>.py``, where ``<model>`` is the part of the ID after the hyphen.

A user's folder laid out the same way (``stanjax run --model-dir``) joins the registry through
``STANJAX_MODEL_DIRS``, which the worker processes inherit.
"""

from __future__ import annotations

import ast
import dataclasses
import decimal
import difflib
import hashlib
import importlib.util
import operator
import os
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "models"
STAN_DIR = ROOT / "stan"
JAX_MODELS_DIR = ROOT / "jax_models"
# tiny: CI smoke tests; small: the quick suite (seconds per run); default: the real comparison; large: the
# published benchmark sizes.
SIZE_NAMES = ("tiny", "small", "default", "large")
# Users' model folders (os.pathsep-separated), each laid out like this repository: models/<id>.py,
# stan/<model>.stan, jax_models/<model>.py. An environment variable, so the worker processes see them too.
MODEL_DIRS_ENV = "STANJAX_MODEL_DIRS"


class UsageError(ValueError):
    """Bad input from a user (command line, config, results path): one line, exit code 2."""


class SizeError(UsageError):
    """Sizes a data generator refuses (its own validation, e.g. fewer than two players): bad input, exit 2. Any
    other exception from a generator is a bug and surfaces as one."""


class SpecError(UsageError):
    """A model spec file that cannot be loaded: one line naming the file, exit 2."""


class UnknownChoice(UsageError):
    """A name given on the command line or in a config that is not one of the valid choices."""

    def __init__(self, kind: str, name: str, choices):
        choices, name = list(choices), str(name)  # the API may be handed anything
        nearest = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
        hint = f"did you mean '{nearest[0]}'? " if nearest else ""
        super().__init__(f"unknown {kind} '{name}' ({hint}choose from: {', '.join(choices)})")


# Whether refusals name options as the API's arguments (``argument_names``), not as the command line's flags.
_API_WORDS: ContextVar[bool] = ContextVar("stanjax_api_words", default=False)
API_ARGUMENTS = {"repeats": "blocks"}  # the API's names that are not the option's


def option(name: str, *value) -> str:
    """An option as whoever asked names it, with its value if given: the command line's ``--chains`` (``--chains
    200``), or within :func:`argument_names` the API's ``chains`` (``chains=200``); so a check is written once. A
    flag's True is its name alone on the command line (``--wait``; the API's ``wait=True``)."""
    if _API_WORDS.get():
        return API_ARGUMENTS.get(name, name.replace("-", "_")) + "".join(f"={v!r}" for v in value)
    return f"--{name}" + "".join(f" {v}" for v in value if v is not True)


@contextmanager
def argument_names():
    """Within: refusals (:func:`option`) name the API's arguments, not the command line's flags."""
    token = _API_WORDS.set(True)
    try:
        yield
    finally:
        _API_WORDS.reset(token)


def api_words() -> bool:
    """Whether refusals name the API's arguments here (within :func:`argument_names`): a worker process the API
    starts is told, so that its refusals name them too."""
    return _API_WORDS.get()


_SIZE_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


def size_value(expression: str, data: dict) -> int:
    """A Stan size expression over integer data ("K", "M - K", "(K * (K - 1)) %/% 2"), evaluated."""

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return int(data[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _SIZE_OPERATORS:
            return _SIZE_OPERATORS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"unsupported size expression: {expression!r}")

    return value(ast.parse(expression.replace("%/%", "//"), mode="eval").body)


@dataclass(frozen=True)
class Parameter:
    """A Stan parameter / NumPyro sample site. ``shape`` holds ints or size expressions over integer data
    entries, written as in the Stan program ("D", "M - K")."""

    name: str
    shape: tuple[int | str, ...] = ()

    def resolve_shape(self, data: dict) -> tuple[int, ...]:
        return tuple(size_value(d, data) if isinstance(d, str) else int(d) for d in self.shape)


@dataclass(frozen=True)
class ModelSpec:
    id: str
    description: str
    parameters: tuple[Parameter, ...]
    sizes: dict[str, dict[str, int]]
    generate: Callable[..., dict]
    # What dominates a gradient's cost (the report groups and describes models by it).
    regime: str = ""
    # A short name for prose and figures ("Hierarchical IRT 2PL"); the id stays the key. "": the id is shown.
    title: str = ""
    # The family of near-duplicates this posterior is one of, by its name ("Party identification, NES"): one
    # program on several data sets (NES's years) or variants of one regression on one data set (kidiq, earnings,
    # mesquite). The report's headline counts count a family once, with its members' range. "": none.
    variant_of: str = ""
    # Parameters whose unconstraining transform differs between Stan and NumPyro (e.g. Stan's simplex is
    # ILR-based, NumPyro's is stick-breaking): the density check then compares log densities, not gradients.
    different_transforms: tuple[str, ...] = ()
    # The size entry that counts observations (rows, matches): the N that data-size studies grow and claims
    # quote. None: no such axis.
    n_key: str | None = None
    # The scaling studies this model takes part in ("data-size", "chains", "devices"), and the seed claims its
    # runs speak to ("tran_hoffman", "ingram", "carpenter"; see reports/claims.py, reports/study_claims.py and
    # reports/approximations.py).
    studies: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    # Devices study: the data entries split by rows over the devices, and the sizes per study scale (rows a
    # multiple of the device counts).
    shard_rows: tuple[str, ...] = ()
    shard_sizes: dict[str, dict[str, int]] = field(default_factory=dict)
    # An external ground truth: size preset -> a reference (the shape of references/*.json, see models/gym.py)
    # or None. Where given, the reference gate compares with it, never with a reference of our own.
    ground_truth: Callable[[str], dict | None] | None = None
    # Quantities computed from the parameters (Stan generated quantities, NumPyro deterministic sites of the same
    # names), summarised and gated like the parameters: a target's own quantities where the model samples another,
    # better-conditioned parameterisation of them. The density check compares the parameters alone.
    quantities: tuple[Parameter, ...] = ()
    # True where only the quantities can be judged: a posterior with symmetries no sampler mixes over (a neural
    # network's hidden units swap and flip), whose quantities every copy of a mode shares. The gates (R-hat, ESS,
    # finite, reference), the run's ESS and a reference then take the quantities alone; the parameters' largest
    # R-hat is recorded beside the R-hat gate, not gated.
    judged_by_quantities: bool = False
    # NUTS's target acceptance (Stan's adapt_delta) for this posterior on every engine, where the runs' 0.8 leaves
    # rare divergent runs that an expert of each tool would answer by raising it (the S&P 500 volatility). Part of
    # the run's settings (``RunConfig.for_model``), so of its config hash. None: the runs' own.
    target_accept: float | None = None
    # The radius of the chains' uniform start on the unconstrained scale, on every engine alike, where the tools'
    # default 2 starts chains where the posterior cannot be reached from (an ODE's rates e^2 times too large: the
    # solver fails and every proposal is rejected), as Stan's user's guide advises for ODE models (smaller inits).
    # Part of the run's settings (``RunConfig.for_model``), so of its config hash. None: the tools' default, 2.
    init_radius: float | None = None
    # The fewest draws per chain this posterior's runs take at a size (size preset -> draws), where the runs' 1000
    # leave the largest R-hat over thousands of parameters above the gate's 1.01 by chance on a converged run:
    # the advice for R-hat above 1.01 is to run longer (Vehtari et al. 2021), on every engine alike. Part of the
    # run's settings (``RunConfig.for_model``), so of its config hash. Empty: the runs' own.
    min_draws: dict[str, int] = field(default_factory=dict)
    # Why NUTS is known not to fit this posterior (a funnel's neck it cannot enter), where the model is here to
    # show that: its runs are gated like every run and not expected to pass (the tiny end-to-end test asks only
    # that their gates were checked). "": NUTS is expected to fit it.
    expected_to_fail: str = ""
    # The model whose reference is this one's: the same posterior reparameterised (a centred hierarchy's
    # non-centred twin, on the same data), whose summaries carry this model's parameter names (its transformed
    # parameters); the gate reads that reference, narrowed to this model's parameters, and ``stanjax reference``
    # refuses this model (its own long runs would be drawn by the sampler the reference is there to judge). "": none.
    reference_twin: str = ""
    # Size entries the density comparison changes from the size it is asked at: an ODE's solves tightened to 1e-10,
    # so that it compares the two models and not the two solvers' errors (about the tolerances apart), where the
    # runs solve at the tolerances an expert uses. Empty: the size's own data.
    density_resize: tuple[tuple[str, int], ...] = ()
    # The folder holding the model's stan/ and jax_models/ files: None for this repository's (STAN_DIR,
    # JAX_MODELS_DIR), a user's model folder otherwise (set by the registry when it loads the folder).
    home: Path | None = None

    @property
    def summarised(self) -> tuple[Parameter, ...]:
        """What every run draws and checks the shapes of: the parameters, then the quantities."""
        return self.parameters + self.quantities

    @property
    def judged(self) -> tuple[Parameter, ...]:
        """What the gates judge and the records summarise: the quantities alone where ``judged_by_quantities``,
        else the parameters and the quantities."""
        return self.quantities if self.judged_by_quantities else self.summarised

    @property
    def counted_as(self) -> str:
        """What the headline counts count this posterior under: its family of near-duplicates, else its title,
        else its id."""
        return self.variant_of or self.title or self.id

    @property
    def data_name(self) -> str:
        return self.id.split("-", 1)[0]

    @property
    def model_name(self) -> str:
        return self.id.split("-", 1)[1]

    @property
    def stan_dir(self) -> Path:
        return STAN_DIR if self.home is None else self.home / "stan"

    @property
    def stan_file(self) -> Path:
        return self.stan_dir / f"{self.model_name}.stan"

    @property
    def stan_threaded_file(self) -> Path | None:
        """The program's within-chain parallel variant (``reduce_sum`` over the likelihood, ``grainsize`` the last
        data entry), where the model has one: what a Stan expert runs with more than one thread per chain."""
        path = self.stan_dir / "threaded" / f"{self.model_name}.stan"
        return path if path.exists() else None

    @property
    def stan_expert_file(self) -> Path | None:
        """The program as a Stan expert writes it (vectorised, data-only quantities in transformed data, fused
        functions), where the model's own program is one published elsewhere that an expert would rewrite
        (posteriordb's): the same posterior, density-tested like every program."""
        path = self.stan_dir / "expert" / f"{self.model_name}.stan"
        return path if path.exists() else None

    @property
    def jax_file(self) -> Path:
        return (JAX_MODELS_DIR if self.home is None else self.home / "jax_models") / f"{self.model_name}.py"

    def size_kwargs(self, size: str, resize=()) -> dict[str, int]:
        """The preset's sizes, with ``resize`` pairs overriding entries (studies vary one size)."""
        if size not in self.sizes:
            raise UnknownChoice("size", size, self.sizes)
        sizes = dict(self.sizes[size])
        for name, value in resize:
            if name not in sizes:
                raise UsageError(f"{self.id} has no size '{name}' (its sizes: {', '.join(sizes) or 'none'})")
            sizes[name] = value
        return sizes

    def density_data(self, size: str, seed: int) -> dict:
        """The data set the density comparison is made on at ``size``: the size's, with ``density_resize``'s
        entries (which the presets need not name: the generator's own arguments)."""
        return self._finite(self.generate(seed, **{**self.size_kwargs(size), **dict(self.density_resize)}))

    def data(self, size: str, seed: int, resize=()) -> dict:
        """The data set for a size preset (optionally resized), validated: finite numbers only."""
        return self._finite(self.generate(seed, **self.size_kwargs(size, resize)))

    def _finite(self, data: dict) -> dict:
        for key, value in data.items():
            if np.issubdtype(np.asarray(value).dtype, np.floating) and not np.all(np.isfinite(value)):
                raise UsageError(f"{self.id}: data entry '{key}' holds NaN or inf")
        return data


def _load_spec(path: Path) -> ModelSpec:
    """The file's ``SPEC``; a file that fails to import or defines no valid SPEC is a SpecError naming it."""
    module_spec = importlib.util.spec_from_file_location(f"stanjax.models._spec_{path.stem.replace('-', '__')}", path)
    # None only for a suffix no loader takes; the callers glob *.py files.
    assert module_spec is not None and module_spec.loader is not None, f"{path}: not a Python file"
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:  # a user's spec file: whatever it raises, name the file and the error in one line
        where = next(
            (
                f" (line {frame.lineno})"
                for frame in reversed(traceback.extract_tb(err.__traceback__))
                if frame.filename == str(path)
            ),
            "",
        )
        raise SpecError(f"model spec {path}{where} does not load: {type(err).__name__}: {err}") from None
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, ModelSpec):
        raise SpecError(f"model spec {path} defines no SPEC = ModelSpec(...)")
    if spec.id != path.stem:
        raise SpecError(f"model spec {path}: SPEC.id '{spec.id}' differs from the file name")
    return spec


@cache
def registry() -> dict[str, ModelSpec]:
    """All model specs, by ID, in file-name order: this repository's, then each model folder's."""
    specs = {p.stem: _load_spec(p) for p in sorted(MODELS_DIR.glob("*-*.py"))}
    for folder in model_dirs():
        specs |= _folder_specs(folder, specs)
    return specs


def model_dirs() -> list[Path]:
    return [Path(p) for p in os.environ.get(MODEL_DIRS_ENV, "").split(os.pathsep) if p]


def add_model_dir(folder: Path) -> list[str]:
    """Take a user's model folder into the registry, in this process and the workers it starts; its IDs."""
    folder = Path(folder).resolve()
    if not (folder / "models").is_dir():
        raise UsageError(
            f"model folder {folder} has no models/ folder (a model folder holds models/<id>.py, "
            "stan/<model>.stan and jax_models/<model>.py, as this repository does)"
        )
    if folder not in model_dirs():
        os.environ[MODEL_DIRS_ENV] = os.pathsep.join(map(str, [*model_dirs(), folder]))
        registry.cache_clear()
    return [spec.id for spec in registry().values() if spec.home == folder]


def _folder_specs(folder: Path, taken: dict[str, ModelSpec]) -> dict[str, ModelSpec]:
    """A model folder's specs, their files checked (its NumPyro models are loaded from their files by
    :func:`stanjax.jax_models.load`, as every engine loads this repository's)."""
    homes = {spec.model_name: spec.jax_file for spec in taken.values()}
    homes |= {p.stem: p for p in JAX_MODELS_DIR.glob("*.py")}
    found = {}
    for path in sorted((folder / "models").glob("*-*.py")):
        spec = dataclasses.replace(_load_spec(path), home=folder)
        if spec.id in taken:
            raise SpecError(f"model spec {path}: {spec.id} is already a model (from {taken[spec.id].stan_dir.parent})")
        if homes.get(spec.model_name, spec.jax_file) != spec.jax_file:
            raise SpecError(
                f"model spec {path}: the model name '{spec.model_name}' is taken by "
                f"{homes[spec.model_name]}: rename the model"
            )
        for needed in (spec.stan_file, spec.jax_file):
            if not needed.exists():
                raise SpecError(f"model spec {path}: {needed} is missing")
        found[spec.id] = spec
        homes[spec.model_name] = spec.jax_file
    return found


def get(model_id: str) -> ModelSpec:
    specs = registry()
    if model_id not in specs:
        raise UnknownChoice("model", model_id, specs)
    return specs[model_id]


def exact_exp(x) -> np.ndarray:
    """exp(x) to 34 digits by Python's decimal module, then rounded to float64: the same bits on every CPU.
    NumPy's float64 exp takes an AVX-512 path where the CPU has one and libm's elsewhere, so data made with it
    differ in the last bits (and in their hash) between machines."""
    context = decimal.Context(prec=34)
    values = np.asarray(x, dtype=np.float64)
    return np.array([float(context.exp(decimal.Decimal(v))) for v in values.ravel().tolist()]).reshape(values.shape)


def exact_log(x) -> np.ndarray:
    """log(x) to 34 digits by Python's decimal module, then rounded to float64: the same bits on every CPU (as
    ``exact_exp``)."""
    context = decimal.Context(prec=34)
    values = np.asarray(x, dtype=np.float64)
    return np.array([float(context.ln(decimal.Decimal(v))) for v in values.ravel().tolist()]).reshape(values.shape)


def libm(function: Callable[..., float], *args) -> np.ndarray:
    """``function`` (one of Python's ``math``, for what decimal lacks: sin, cos, pow) at every value of ``args``
    (broadcast): the C library's scalar result, where NumPy's float64 loops take an AVX-512 path (SVML) on CPUs
    that have one and libm's elsewhere."""
    return np.vectorize(function, otypes=[np.float64])(*(np.asarray(a, dtype=np.float64) for a in args))


def data_hash(data: dict) -> str:
    """Content hash of a data dict: keys, dtypes, shapes and bytes (sha256, first 16 hex digits)."""
    digest = hashlib.sha256()
    for key in sorted(data):
        value = np.ascontiguousarray(data[key])
        digest.update(f"{key}|{value.dtype.str}|{value.shape}|".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()[:16]
