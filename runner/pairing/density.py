"""Do a Stan program and a NumPyro model define the same posterior? Compare log densities and gradients.

At points in the posterior's region (draws of a short Stan run, so that no side needs a prior it can sample: a flat
prior, data that are both observed and a covariate), Stan's log density (``log_prob`` without the Jacobian, at the
point's unconstrained image) and NumPyro's ``log_density`` must differ by one constant: the normalising terms
Stan's ``~`` statements drop. The tolerance is absolute (log density units) plus rounding at the scale of the log
densities there: at prior draws a wide prior makes |log density| ~1e14, and a relative tolerance there let a
different prior pass. Where both sides map the parameters to the same unconstrained space (checked, not assumed),
the gradients of the Jacobian-adjusted log densities must agree exactly. A Stan draw outside the NumPyro model's
support (a Stan bound wider than NumPyro's, Stan's density not zero beyond it) is a different posterior: NumPyro's
log density there is whatever its formula gives, unchecked, so no offset is compared.

The name/shape mapping is shared by every model: parameters are taken in ``spec.parameters`` order (Stan's
declaration order), values cross to Stan as JSON nested lists (Stan reads them row by row), and Stan's
unconstrained vector is each parameter flattened column-major, one after the other.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stanjax import jax_models
from stanjax.models import ModelSpec
from stanjax.runner.measure.supports import BOUNDS, constraint_text, numpyro_constraint

TOLERANCE = 1e-6  # log density units: a posterior that differs by less is not told apart by any sampler
ROUNDING = 1e-11  # times the largest |log density| at the points: rounding of long sums, summed in another order
GRADIENT_TOLERANCE = 1e-6  # relative, per coordinate
WARMUP, THIN = 200, 10  # the short Stan run the points come from: one chain, its draws thinned


@dataclass
class DensityCheck:
    log_density_stan: list[float]
    log_density_numpyro: list[float]
    same_transforms: bool
    max_gradient_error: float | None  # None where the transforms differ
    # per point where a Stan draw lies outside the NumPyro model's support, its sites' values there (a Stan bound
    # wider than NumPyro's, with a Stan density not zero beyond it): no offset is compared then
    outside: list[list[str]] = field(default_factory=list)

    @property
    def offsets(self) -> np.ndarray:
        return np.array(self.log_density_stan) - np.array(self.log_density_numpyro)

    @property
    def offset_spread(self) -> float:
        """Largest departure from a constant offset, in log density units."""
        return float(np.max(np.abs(self.offsets - self.offsets[0])))

    @property
    def tolerance(self) -> float:
        return tolerance(self.log_density_stan)

    @property
    def constant_offset(self) -> bool:
        return self.offset_spread <= self.tolerance

    @property
    def ok(self) -> bool:
        if self.outside:
            return False
        gradients_ok = self.max_gradient_error is None or self.max_gradient_error <= GRADIENT_TOLERANCE
        return self.constant_offset and gradients_ok


def tolerance(log_densities) -> float:
    return TOLERANCE + ROUNDING * float(np.max(np.abs(log_densities)))


def posterior_points(spec: ModelSpec, data: dict, n_points: int, seed: int) -> list[dict]:
    """``n_points`` constrained parameter points in the posterior's region: the draws of one short Stan chain
    (``WARMUP`` iterations of warm-up, then every ``THIN``-th draw), by name, shaped as Stan declares them. Stan
    draws them because every Stan program can be sampled; a NumPyro model with a flat prior cannot be drawn from."""
    fit = stan_model(spec, data, random_seed=seed).sample(
        num_chains=1, num_warmup=WARMUP, num_samples=n_points * THIN, num_thin=THIN
    )
    dims = {name: tuple(dim) for name, dim in zip(fit.param_names, fit.dims)}
    return [
        {p.name: np.asarray(fit[p.name][..., i], dtype=np.float64).reshape(dims[p.name]) for p in spec.parameters}
        for i in range(n_points)
    ]


def sampling_overhead_s(spec: ModelSpec, data: dict, seed: int) -> float:
    """Seconds of a Stan run of one chain and one iteration (the model bound to the data, the sampler started and
    its draws read): what a short run's seconds hold beside its iterations."""
    began = time.perf_counter()
    stan_model(spec, data, random_seed=seed).sample(num_chains=1, num_warmup=0, num_samples=1)
    return time.perf_counter() - began


def _flatten(spec: ModelSpec, values: dict) -> np.ndarray:
    """Stan's unconstrained layout: each parameter flattened column-major, in declaration order."""
    return np.concatenate([np.ravel(np.asarray(values[p.name]), order="F") for p in spec.parameters])


def numpyro_side(spec: ModelSpec, data: dict, point: dict) -> tuple[float, np.ndarray, np.ndarray]:
    """Log density without Jacobian; unconstrained point and gradient of the adjusted log density, flattened."""
    import jax
    import numpyro
    from numpyro.infer.util import log_density, potential_energy, unconstrain_fn

    numpyro.enable_x64()
    model = jax_models.load(spec.jax_file)
    log_joint, _ = log_density(model, (), data, point)
    unconstrained = unconstrain_fn(model, (), data, point)
    gradient = jax.grad(lambda u: -potential_energy(model, (), data, u))(unconstrained)
    return float(log_joint), _flatten(spec, unconstrained), _flatten(spec, gradient)


def stan_model(
    spec: ModelSpec,
    data: dict,
    stan_file: Path | None = None,
    random_seed: int | None = None,
    stanc_options: tuple[str, ...] = (),
):
    """A pystan model of ``stan_file`` (default: the spec's Stan program; translated with ``stanc_options``) with
    the data bound (and the seed of its sampling, pystan's place for it): the module the bundled Stan engine runs
    (built for the host's ISA, found in httpstan's cache by its program text)."""
    import stan
    from stanjax.runner.engines.stan_bundled import HttpstanBackend

    built = HttpstanBackend().compile(stan_file or spec.stan_file, "native", stanc_options)
    return stan.build(built["program_code"], data=data, random_seed=random_seed)


def build(spec: ModelSpec) -> float | None:
    """The spec's Stan program built as the runs load it (``stan_model``'s build): the seconds of a first build,
    None where it was in the cache."""
    from stanjax.runner.engines.stan_bundled import HttpstanBackend

    built = HttpstanBackend().compile(spec.stan_file, "native")
    return None if built["cached"] else built["compile_s"]


def stan_side(spec: ModelSpec, model, point: dict) -> tuple[float, np.ndarray, np.ndarray]:
    """Log density without Jacobian, unconstrained point and gradient of the adjusted log density."""
    constrained = {p.name: np.asarray(point[p.name]).tolist() for p in spec.parameters}
    unconstrained = list(model.unconstrain_pars(constrained))
    log_density = model.log_prob(unconstrained, adjust_transform=False)
    gradient = model.grad_log_prob(unconstrained)
    return float(log_density), np.asarray(unconstrained), np.asarray(gradient)


def check(
    spec: ModelSpec,
    data: dict,
    points: list[dict],
    grainsize: int | None = None,
    stan_file: Path | None = None,
    stanc_options: tuple[str, ...] = (),
) -> DensityCheck:
    """``grainsize`` given: check the model's threaded program (``spec.stan_threaded_file``) with that grainsize;
    ``stan_file`` given: that program of the model (its expert one) in place of its own; ``stanc_options``: the
    program translated with them (stanc's optimiser, --O1)."""
    outside = [found for point in points if (found := outside_support(spec, data, point))]
    if outside:
        return DensityCheck([], [], False, None, outside)
    if grainsize is None:
        model = stan_model(spec, data, stan_file, stanc_options=stanc_options)
    else:
        model = stan_model(spec, {**data, "grainsize": grainsize}, spec.stan_threaded_file)
    stan_lp, numpyro_lp, same, gradient_errors = [], [], True, []
    for point in points:
        lp_s, unc_s, grad_s = stan_side(spec, model, point)
        lp_n, unc_n, grad_n = numpyro_side(spec, data, point)
        stan_lp.append(lp_s)
        numpyro_lp.append(lp_n)
        same = same and unc_s.shape == unc_n.shape and np.allclose(unc_s, unc_n, rtol=1e-10, atol=1e-12)
        if same:
            gradient_errors.append(float(np.max(np.abs(grad_s - grad_n) / np.maximum(1.0, np.abs(grad_s)))))
    return DensityCheck(stan_lp, numpyro_lp, same, max(gradient_errors) if same else None)


def outside_support(spec: ModelSpec, data: dict, point: dict) -> list[str]:
    """The NumPyro model's latent sites of a bounded support (``supports.BOUNDS``: where the two sides'
    bounds may differ) whose support does not hold their value at ``point`` (a Stan draw), each as ``beta2 = 15.3
    (support lower=-10, upper=10)`` (a vector's first element outside, by Stan's 1-based index)."""
    import numpyro
    from numpyro import handlers
    from numpyro.distributions import constraints

    numpyro.enable_x64()
    model = jax_models.load(spec.jax_file)
    found = []
    for name, site in handlers.trace(handlers.substitute(model, data=point)).get_trace(**data).items():
        if site["type"] != "sample" or site["is_observed"] or name not in point:
            continue
        support = site["fn"].support
        while isinstance(support, constraints.independent):  # element by element, to name the element
            support = support.base_constraint
        if numpyro_constraint(support)[0] not in BOUNDS:  # the static stage found the two sides' the same
            continue
        value = np.asarray(site["value"], dtype=np.float64)
        inside = np.asarray(support(value), dtype=bool)
        if inside.all():
            continue
        where = ""
        if inside.shape == value.shape:  # an element-wise support: the first element outside
            index = tuple(int(i) for i in np.argwhere(~inside)[0])
            where = f"[{','.join(str(i + 1) for i in index)}]" if index else ""
            value = value[index]
        shown = f" = {float(value):.4g}" if value.ndim == 0 else ""
        found.append(f"{name}{where}{shown} (support {constraint_text(numpyro_constraint(support))})")
    return found


def non_finite_site(spec: ModelSpec, data: dict, point: dict) -> tuple[str, str, float, str] | None:
    """The first site of the NumPyro model, in the order it runs, whose log probability (summed over its elements)
    is not finite at ``point``: its kind (sample site, observed site, factor), its name, that sum, and where the
    model's file makes it (`` (line N of FILE: code)``, as ``static_checks.where`` says it; "" where the call is not
    in it); None where every site's is finite."""
    import jax.numpy as jnp
    from numpyro import handlers
    from numpyro.distributions.distribution import Unit
    from numpyro.primitives import Messenger

    file = Path(spec.jax_file).resolve()
    lines: dict[str, traceback.FrameSummary] = {}

    class Lines(Messenger):
        """Each sample site's innermost frame in the model's file, as it is made."""

        def process_message(self, msg):
            if msg["type"] != "sample":
                return
            frames = [frame for frame in traceback.extract_stack() if Path(frame.filename).resolve() == file]
            if frames:
                lines.setdefault(msg["name"], frames[-1])

    model = Lines(jax_models.load(spec.jax_file))
    for name, site in handlers.trace(handlers.substitute(model, data=point)).get_trace(**data).items():
        if site["type"] != "sample":
            continue
        scale = 1.0 if site["scale"] is None else site["scale"]  # as numpyro's log_density scales it
        total = float(jnp.sum(scale * site["fn"].log_prob(site["value"])))
        if math.isfinite(total):
            continue
        fn = site["fn"]
        while hasattr(fn, "base_dist"):  # a plate's expand, a mask, to_event
            fn = fn.base_dist
        kind = "factor" if isinstance(fn, Unit) else "observed site" if site["is_observed"] else "sample site"
        frame = lines.get(name)
        return kind, name, total, f" (line {frame.lineno} of {file.name}: {frame.line})" if frame else ""
    return None
