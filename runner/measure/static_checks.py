"""Static checks of a Stan/NumPyro pair on its data: what can be compared before anything compiles or samples.

A pair whose data, parameter names, shapes or constraints disagree cannot target one posterior, and finding that
out by sampling costs a compile and a run and ends in a record's error field. Here the Stan program is read through
stanc (:mod:`stanjax.runner.measure.stan_program`: its syntax tree, ``--debug-ast``, a fraction of a second, no C++
compile) and the NumPyro model is traced once on the data (its sample sites, their shapes and supports); then:

- data: the keys against the Stan data block and the NumPyro function's signature; each entry's type, shape and
  bounds against its declaration;
- parameters: NumPyro's latent sample sites against the Stan parameters (names, shapes, constraints), and a spec's
  declared parameters against the program's, in declaration order (the layout the density check relies on);
- transforms: a constraint both sides share but map to the unconstrained space differently (Stan's ILR simplex,
  NumPyro's stick-breaking) is a note, not a problem: the density check then compares log densities only; so are
  bounds that differ (Stan's ``real<lower=-10, upper=20>`` under a ``uniform(-10, 10)`` prior, NumPyro's
  ``Uniform(-10, 10)``): the same posterior where the wider side's density is zero beyond the narrower's bounds,
  which the density check decides (no Stan draw may lie outside NumPyro's support).

Every problem is one line. ``stanjax check`` and every ``stanjax run`` stop on any, with exit code 2.
"""

from __future__ import annotations

import difflib
import inspect
import linecache
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stanjax import jax_models
from stanjax.models import ModelSpec, UsageError
from stanjax.runner.engines.stan import check_program
from stanjax.runner.measure.stan_program import Declaration, StanProgram, read_program
from stanjax.runner.measure.supports import BOUNDS, SAME_TRANSFORM, constraint_text, numpyro_constraint, same_constraint


class StaticCheckError(UsageError):
    """The problems a pair's static checks found, one line each."""


def _jax_on_the_cpu() -> None:
    """Trace on the CPU where this process has not started JAX yet: a GPU backend started here (the campaign's
    process) would hold GPU memory its workers need."""
    fresh = "jaxlib" not in sys.modules
    import jax

    if fresh:
        jax.config.update("jax_platforms", "cpu")


def shape_text(name: str, shape: tuple | None) -> str:
    if shape is None:
        return f"{name}[?]"
    return f"{name}[{','.join(map(str, shape))}]" if shape else name


# --- the checks ----------------------------------------------------------------------------------------------------


@dataclass
class Findings:
    """What the static checks found: problems (one line each) and notes, and the parameters they compared."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    parameters: dict[str, tuple[int, ...] | None] = field(default_factory=dict)  # Stan's, declaration order
    # NumPyro sites whose support's bounds are computed from another site (beta1 in (0, 1 - alpha1)): the density
    # check compares them, but NumPyro's MCMC cannot sample them as written
    dependent_supports: list[str] = field(default_factory=list)


def check(spec: ModelSpec, data: dict, left_out: tuple[str, ...] = ()) -> Findings:
    """Compare the spec's Stan program, NumPyro model and data (see the module's docstring); ``left_out``: data
    keys set aside before (neither side's), which a missing entry's message names where one is near its name."""
    check_program(spec)  # stanc's own errors first, one line
    findings = Findings()
    stan_name = spec.stan_file.name
    program = read_program(spec.stan_file)
    model = _numpyro_model(spec, findings)
    if model is None:
        return findings
    _check_data(program, data, model, stan_name, findings, left_out)
    if findings.problems:  # sites cannot be traced on data that do not fit
        return findings
    env = program.environment(data)
    findings.parameters = {p.name: p.shape(env) for p in program.parameters}
    sites = _latent_sites(model, data, findings, spec.jax_file)
    if sites is None:
        return findings
    _check_parameters(program, env, sites, stan_name, findings)
    _check_spec(spec, program, env, stan_name, findings)
    return findings


def require(spec: ModelSpec, data: dict, left_out: tuple[str, ...] = ()) -> Findings:
    """:func:`check`, raising StaticCheckError (one line per problem, each naming the model) on any problem."""
    findings = check(spec, data, left_out)
    if findings.problems:
        raise StaticCheckError("\n".join(f"{spec.id}: {problem}" for problem in findings.problems))
    return findings


def _numpyro_model(spec: ModelSpec, findings: Findings):
    """The NumPyro function, or None with the reason as a problem."""
    try:
        return jax_models.load(spec.jax_file)
    except AttributeError:
        findings.problems.append(
            f"{spec.jax_file.name} defines no function named '{spec.model_name}' (the "
            "NumPyro model is the function named as its file)"
        )
    except Exception as err:  # a user's module: whatever it raises, one line
        message = err.msg if isinstance(err, SyntaxError) else first_line(err)  # str() names the copied file
        findings.problems.append(
            f"{spec.jax_file.name} does not import: {type(err).__name__}: {message}{where(err, spec.jax_file)}"
        )
    return None


def first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [""])[0]


def where(err: BaseException, file: Path) -> str:
    """`` (line N of FILE: its code)`` for the innermost frame of ``err``'s traceback in ``file`` (a user's model),
    or the line a SyntaxError in it names; "" where neither is in it. A user reads their own line, not stanjax's."""
    file = Path(file).resolve()
    if isinstance(err, SyntaxError) and err.filename and Path(err.filename).resolve() == file:
        return f" (line {err.lineno} of {file.name}: {(err.text or '').strip()})"
    frames = [frame for frame in traceback.extract_tb(err.__traceback__) if Path(frame.filename).resolve() == file]
    return f" (line {frames[-1].lineno} of {file.name}: {frames[-1].line})" if frames else ""


def _check_data(
    program: StanProgram, data: dict, model, stan_name: str, findings: Findings, left_out: tuple[str, ...]
) -> None:
    """Data keys against the data block and the NumPyro signature; each entry's type, shape and bounds; a missing
    entry names the key the data have near its name (a misspelling), among those no side declares."""
    parameters = inspect.signature(model).parameters
    any_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    takes = {
        name
        for name, p in parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    declared = {d.name: d for d in program.data}
    function = f"{model.__name__}()" if hasattr(model, "__name__") else "the NumPyro model"
    undeclared = [key for key in data if key not in declared and key not in takes] + list(left_out)
    for d in program.data:
        if d.name not in data:
            also = f", and {function} takes it" if d.name in takes else ""
            near = difflib.get_close_matches(d.name, undeclared, n=1)
            hint = f" (the data have '{near[0]}', which neither side declares: a misspelling?)" if near else ""
            findings.problems.append(
                f"data has no '{d.name}': {stan_name}'s data block declares {d.text()} {d.name}{also}{hint}"
            )
        elif d.name not in takes and not any_keyword:
            findings.problems.append(
                f"{function} takes no argument '{d.name}', which the data and {stan_name}'s "
                f"data block have (its arguments: {', '.join(takes) or 'none'})"
            )
    for key in data:
        if key not in declared:
            by = f"{function} takes it" if key in takes else f"nor does {function} take it"
            findings.problems.append(
                f"data key '{key}' is not in {stan_name}'s data block ({', '.join(declared) or 'empty'}); {by}"
            )
    for name, p in parameters.items():
        if (
            p.default is inspect.Parameter.empty
            and name not in data
            and name not in declared
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ):
            findings.problems.append(
                f"{function} needs argument '{name}', which neither the data nor {stan_name}'s data block has"
            )
    env = dict(data)
    for d in program.data:
        if d.name in data:
            problem = _data_entry_problem(d, np.asarray(data[d.name]), env, stan_name)
            if problem:
                findings.problems.append(problem)


def _data_entry_problem(d: Declaration, value: np.ndarray, env: dict, stan_name: str) -> str | None:
    declared = f"{stan_name}'s {d.text()} {d.name}"
    numeric = np.issubdtype(value.dtype, np.number) or value.dtype == bool
    if not numeric or (
        d.is_int() and value.size and not np.issubdtype(value.dtype, np.integer) and value.dtype != bool
    ):
        return f"data '{d.name}' holds {value.dtype} values, which do not fit {declared}"
    expected = d.shape(env)
    if expected is not None and value.shape != expected and not (value.size == 0 and 0 in expected):
        return f"data '{d.name}' has shape {value.shape}, but {declared} has shape {expected}"
    kind, *bounds = d.constraint(env)
    if kind in ("lower", "interval") and bounds[0] is not None and value.size and np.any(value < bounds[0]):
        return f"data '{d.name}' holds {value.min():g}, below the lower bound of {declared}"
    upper = bounds[-1] if kind in ("upper", "interval") else None
    if upper is not None and value.size and np.any(value > upper):
        return f"data '{d.name}' holds {value.max():g}, above the upper bound of {declared}"
    return None


def _latent_sites(model, data: dict, findings: Findings, jax_file: Path) -> dict | None:
    """Name -> (shape, constraint) of the model's latent sample sites on the data, or None with the reason. The
    model is traced abstractly (``jax.eval_shape``, data as constants, as NUTS runs it): shapes without computing
    anything; a bound computed from other sites is not known then (None). Latent values come from
    ``init_to_uniform``, as NUTS starts, so a site with no sampler of its own (``ImproperUniform``, a flat prior)
    traces too."""
    _jax_on_the_cpu()
    import jax
    from numpyro import handlers
    from numpyro.infer import init_to_uniform

    sites = {}

    def trace():
        started = handlers.substitute(handlers.seed(model, rng_seed=0), substitute_fn=init_to_uniform)
        for name, site in handlers.trace(started).get_trace(**data).items():
            if site["type"] == "sample" and not site["is_observed"]:
                constraint = numpyro_constraint(site["fn"].support)
                sites[name] = (
                    tuple(site["value"].shape),
                    tuple(None if isinstance(b, jax.core.Tracer) else b for b in constraint),
                )
                if any(isinstance(b, jax.core.Tracer) for b in constraint):  # data are constants: another site's
                    findings.dependent_supports.append(name)

    try:
        jax.eval_shape(trace)
    except Exception as err:  # a user's model: whatever it raises on the data, one line
        findings.problems.append(
            f"the NumPyro model fails on the data: {type(err).__name__}: {first_line(err)}{where(err, jax_file)}"
        )
        return None
    return sites


def out_of_bounds(model, data: dict, jax_file: Path) -> str | None:
    """Where the NumPyro model, run once on the data at a start NUTS could take, indexes an array out of bounds
    (JAX's checkify): one line naming the user's line, or None. JAX clamps such an index where NumPy raises, so
    a port indexing a parameter one past its end (Stan's 1-based indices kept) would otherwise differ in density
    only, while the same mistake on data fails here; both are the same kind of mistake, said the same way."""
    _jax_on_the_cpu()
    import jax
    from jax.experimental import checkify
    from numpyro import handlers
    from numpyro.infer import init_to_uniform

    def run():
        started = handlers.substitute(handlers.seed(model, rng_seed=0), substitute_fn=init_to_uniform)
        handlers.trace(started).get_trace(**data)

    try:
        error, _ = jax.jit(checkify.checkify(run, errors=checkify.index_checks))()
    except Exception:  # what fails to run is the abstract trace's to say (``_latent_sites``)
        return None
    found = error.get_exception()
    if found is None:
        return None
    # the frames where the index was taken, innermost first ("path:line (function)"); the first outside JAX must be
    # the user's: a library may index past an end on purpose, relying on the clamp (diffrax's saved times do)
    frames = re.findall(r"^(.+):(\d+) \(", str(getattr(found, "traceback_info", "")), flags=re.M)
    jax_dir = Path(jax.__file__).resolve().parent
    caller = next((frame for frame in frames if jax_dir not in Path(frame[0]).resolve().parents), None)
    file = Path(jax_file).resolve()
    if caller is None or Path(caller[0]).resolve() != file:
        return None
    code = linecache.getline(caller[0], int(caller[1])).strip()
    return (
        f"the NumPyro model indexes out of bounds on the data: {str(found).strip().rstrip('.')} "
        f"(line {caller[1]} of {file.name}: {code})"
    )


def _check_parameters(program: StanProgram, env: dict, sites: dict, stan_name: str, findings: Findings) -> None:
    """Sites against parameters: names (both sides listed), shapes, constraints; differing transforms as notes."""
    stan_list = ", ".join(shape_text(p.name, p.shape(env)) for p in program.parameters) or "none"
    site_list = ", ".join(shape_text(name, shape) for name, (shape, _) in sites.items()) or "none"
    sides = f"(Stan parameters: {stan_list}; NumPyro sites: {site_list})"
    stan_only = [p for p in program.parameters if p.name not in sites]
    site_only = [name for name in sites if name not in {p.name for p in program.parameters}]
    for p in stan_only:
        same_shape = [name for name in site_only if sites[name][0] == p.shape(env)]
        partner = same_shape[0] if same_shape else (site_only[0] if len(stan_only) == len(site_only) == 1 else None)
        if partner:
            site_only.remove(partner)
            findings.problems.append(
                f"NumPyro site '{partner}' is not a Stan parameter and Stan parameter '{p.name}' ({p.text()}) has "
                f"no NumPyro site: name them alike {sides}"
            )
        else:
            findings.problems.append(f"Stan parameter '{p.name}' ({p.text()}) has no NumPyro sample site {sides}")
    for name in site_only:
        findings.problems.append(f"NumPyro sample site '{name}' is not a Stan parameter {sides}")
    for p in program.parameters:
        if p.name not in sites:
            continue
        shape, numpyro = sites[p.name]
        stan_shape = p.shape(env)
        if stan_shape is not None and stan_shape != shape:
            findings.problems.append(
                f"'{p.name}': Stan declares {p.text()}, shape {stan_shape}; the NumPyro site has shape {shape}"
            )
            continue
        stan = p.constraint(env)
        if not same_constraint(stan, numpyro) and {stan[0], numpyro[0]} <= BOUNDS:
            findings.notes.append(
                f"'{p.name}': Stan declares {p.text()} ({constraint_text(stan)}), the NumPyro site's support is "
                f"{constraint_text(numpyro)}: one posterior only if each side's density is zero where the other's "
                "support ends (a uniform or truncated prior); the density stage decides at Stan's draws (none may "
                "lie outside NumPyro's support), comparing log densities, not gradients (the transforms differ)"
            )
        elif not same_constraint(stan, numpyro):
            findings.problems.append(
                f"'{p.name}': Stan declares {p.text()} ({constraint_text(stan)}), the NumPyro "
                f"site's support is {constraint_text(numpyro)}: not the same posterior"
            )
        elif stan[0] not in SAME_TRANSFORM or "affine" in stan or "softplus" in numpyro:
            findings.notes.append(
                f"'{p.name}' ({p.text()}): Stan and NumPyro map it to the unconstrained space "
                "differently, so the density check compares log densities, not gradients"
            )


def _check_spec(spec: ModelSpec, program: StanProgram, env: dict, stan_name: str, findings: Findings) -> None:
    """A spec's parameters are the program's, in declaration order, with the same shapes."""
    declared, ours = [p.name for p in program.parameters], [p.name for p in spec.parameters]
    if declared != ours:
        findings.problems.append(
            f"SPEC.parameters ({', '.join(ours)}) differ from {stan_name}'s parameters in "
            f"declaration order ({', '.join(declared)})"
        )
        return
    for ours_p, stan_p in zip(spec.parameters, program.parameters):
        try:
            shape = ours_p.resolve_shape(env)
        except (KeyError, ValueError):
            findings.problems.append(
                f"'{ours_p.name}': its shape {ours_p.shape} cannot be computed from the data "
                "(sizes are data entries and integers with + - * %/%)"
            )
            continue
        stan_shape = stan_p.shape(env)
        if stan_shape is not None and shape != stan_shape:
            findings.problems.append(
                f"SPEC.parameters: '{ours_p.name}' has shape {shape}, {stan_name} declares "
                f"{stan_p.text()}: shape {stan_shape}"
            )
