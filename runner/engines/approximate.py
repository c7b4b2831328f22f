"""Approximate inference on the same NumPyro models as the samplers (the unconstrained log density of
``numpyro.infer.util.initialize_model``): fit an approximation q to the posterior, draw from it, and judge it by the
Pareto k-hat of its importance weights p / q (Yao et al. 2018, "Yes, but did it work?"; Vehtari et al. 2024).

- ``flow_realnvp``: flowjax's coupling flow, affine couplings with permutations between them (RealNVP, Dinh et al.
  2017) trained by ELBO, then Pareto-smoothed importance resampling: Carpenter's recipe against Stan's NUTS
  (StanCon 2024); ``flow_maf``: flowjax's masked autoregressive flow (Papamakarios et al. 2017), a labelled extra;
- ``advi_meanfield`` and ``advi_fullrank``: ADVI (Kucukelbir et al. 2017) as NumPyro's SVI fits it, with
  ``AutoDiagonalNormal`` (the mean-field normal of ``AutoNormal``, over one flat vector whose density PSIS needs) and
  ``AutoMultivariateNormal``; its draws are q's, as ADVI gives them, their k-hat the diagnostic;
- ``pathfinder``: BlackJAX's Pathfinder (Zhang et al. 2022), one path from each chain's start, the paths' draws
  pooled and importance-resampled, as multi-path Pathfinder (and Stan's) does.

Every engine's iterations before its draws are ``config.warmup`` (training steps; L-BFGS iterations for Pathfinder),
timed as its warmup. The fit and the drawing are each one function, lowered and compiled ahead of time (after the
fit's setup: a flow's untrained state, ADVI's guide initialised, which traces the model) and then run to
``block_until_ready``: their clocks hold no compilation and nothing is subtracted (``compile_s`` is the setup and
the compiles). Then ``IMPORTANCE_DRAWS`` times as many draws as the run keeps are drawn and weighted, their
weights Pareto-smoothed (arviz-stats' PSIS: below k-hat 0.7 importance-sampling estimates converge at a usable
rate), and ``chains x draws`` kept: resampled by weight with replacement, or, for ADVI, the first of q's own. They
are laid out as (chains, draws) for the common code path, but they are independent draws, not chains: an
approximate engine's gates are its k-hat and, beside it, its errors in reference sds
(:func:`stanjax.runner.measure.validity.evaluate_approximate`), never R-hat or ESS.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

import numpy as np

from stanjax import jax_models
from stanjax.models import ModelSpec
from stanjax.runner.core.config import Placement, RunConfig
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings
from stanjax.runner.engines.importance import IMPORTANCE_DRAWS, weigh
from stanjax.runner.engines.jax_setup import CompileClock, device_info, initial_points, start_jax

FLOW_LAYERS = 8  # flowjax's defaults for both flows
NN_WIDTH = 50
FLOW_LEARNING_RATE = 1e-3  # Adam's first step size, as flowjax's variational-inference example, decaying to 0
FLOW_GRADIENT_CLIP = 10.0  # the largest global norm of a step's gradient: a spike moves the weights no further
FLOW_ELBO_DRAWS = 16  # draws of the flow per training step, each one gradient of the target
ADVI_LEARNING_RATE = 1e-2  # Adam's first step size, as NumPyro's SVI examples, decaying to 0 (cosine)
ADVI_ELBO_DRAWS = 1  # Trace_ELBO's default, as Stan's ADVI (grad_samples = 1)
PATHFINDER_ELBO_DRAWS = 25  # per point of the path, to pick the best normal on it: Stan's num_elbo_draws


@dataclass(frozen=True)
class Training:
    """A fit set up: ``function`` of ``arguments`` (arrays: an optimiser's state, start points, keys) runs it, to be
    compiled ahead and timed; ``finish`` reads its output into (what ``draw`` takes, the record's facts)."""

    function: Callable
    arguments: tuple
    finish: Callable[[object], tuple[object, dict]]


@dataclass(frozen=True)
class Fit:
    """A fitted approximation (what ``draw`` takes), the facts the record keeps, and the seconds of its setup and
    compilation (before the clock) and of the fit itself (the compiled call, to ``block_until_ready``)."""

    fitted: object
    facts: dict
    compile_s: float
    fit_s: float


class ApproximateEngine:
    """The common part: start JAX, fit (``training``: set up, compiled, then timed), draw and weigh (``draw``),
    smooth, keep, time, record.

    ``training(jax, problem, config, key) -> Training`` sets the fit up; the facts its ``finish`` reads go into the
    record (with ``"gradients"``, the target's gradient evaluations, where known). ``draw(jax, fitted, key, n) ->
    (unconstrained sites, log q)`` is compiled with the target's log density."""

    name: str
    resample = True  # keep draws resampled by their smoothed weights (False: the first of q's own draws)
    package = "numpyro"

    def training(self, jax, problem: Problem, config: RunConfig, key) -> Training:
        """Each engine's own (see the class's docstring)."""
        raise NotImplementedError

    def fit(self, jax, problem: Problem, config: RunConfig, key) -> Fit:
        """Set up and compile the fit, then run it on the clock."""
        start = time.perf_counter()
        training = self.training(jax, problem, config, key)
        compiled = jax.jit(training.function).lower(*training.arguments).compile()
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        output = jax.block_until_ready(compiled(*training.arguments))
        fit_s = time.perf_counter() - start
        return Fit(*training.finish(output), compile_s, fit_s)

    def draw(self, jax, fitted, key, n: int):
        """Each engine's own (see the class's docstring)."""
        raise NotImplementedError

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        """Nothing to build ahead of the data: fitting and drawing compile inside ``sample``, timed apart."""
        return {"model": jax_models.load(spec.jax_file)}

    def sample(
        self,
        handle,
        data: dict,
        config: RunConfig,
        seed: int,
        placement: Placement = Placement("cpu", "float64", "vectorized"),
    ) -> SampleResult:
        if placement.chain_method != "vectorized":
            raise ValueError("an approximate engine draws every point in one batch")
        jax = start_jax(placement, config.chains)
        key_init, key_fit, key_draw = jax.random.split(jax.random.PRNGKey(seed), 3)
        problem = Problem(jax, handle["model"], data, config, key_init)

        clock = CompileClock()  # here only for its persistent-cache counts
        fit = self.fit(jax, problem, config, key_fit)
        facts = dict(fit.facts)

        kept = config.chains * config.draws
        n_drawn = IMPORTANCE_DRAWS * kept

        def draw_and_weigh(key):  # the fitted approximation enters as constants
            sites, log_q = self.draw(jax, fit.fitted, key, n_drawn)
            return sites, jax.vmap(problem.log_density_of_sites)(sites) - log_q

        start = time.perf_counter()
        drawing = jax.jit(draw_and_weigh).lower(key_draw).compile()
        drawing_compile = time.perf_counter() - start
        start = time.perf_counter()
        sites, log_weights = jax.block_until_ready(drawing(key_draw))
        sampling_s = time.perf_counter() - start

        start = time.perf_counter()
        chosen, weighing = weigh(log_weights, kept, seed, self.resample)
        constrained = jax.vmap(problem.postprocess_fn)(jax.tree.map(lambda site: site[chosen], sites))
        draws = {
            name: np.asarray(value, dtype=np.float64).reshape(config.chains, config.draws, *value.shape[1:])
            for name, value in constrained.items()
        }
        keeping_s = time.perf_counter() - start

        timings = Timings(
            compile_s=fit.compile_s + drawing_compile,
            warmup_s=fit.fit_s,
            sampling_s=sampling_s,
            user_s=fit.fit_s + sampling_s + keeping_s,
            source="warmup: the fit (training or L-BFGS), sampling: drawing and weighing the approximation's draws, "
            "each compiled ahead of time (after the fit's setup) and run to block_until_ready, nothing subtracted; "
            "user: the same plus Pareto smoothing, keeping (resampling) and constraining the draws into host arrays",
            compile_cached=clock.all_cached,
            detail={"keeping_s": keeping_s},
        )
        stats = SamplerStats(
            n_leapfrog=np.zeros((config.chains, config.draws), dtype=np.int64),  # no gradient after fitting
            divergent=np.zeros((config.chains, config.draws), dtype=bool),
            warmup_gradients=facts.pop("gradients", None),
        )
        info = {
            self.package: metadata.version(self.package),
            "jaxlib": metadata.version("jaxlib"),
            "method": self.name,
            "iterations": config.warmup,
            **facts,
            **weighing,
            **device_info(jax, placement, config.chains),
        }
        return SampleResult(draws, timings, stats, info)


class Problem:
    """The model's unconstrained target as the approximations see it: the chains' start points flattened into
    one vector each (``starts``), the log density of such a vector and of a dict of unconstrained sites, and the
    map from sites to the constrained draws."""

    def __init__(self, jax, model, data: dict, config: RunConfig, key):
        from jax.flatten_util import ravel_pytree

        self.model, self.data = model, data
        init_z, self.potential_fn, self.postprocess_fn = initial_points(jax, model, data, config, key)
        _, self.unravel = ravel_pytree(jax.tree.map(lambda starts: starts[0], init_z))
        self.starts = jax.vmap(lambda z: ravel_pytree(z)[0])(init_z)  # (chains, dimension)

    def log_density(self, x):
        return -self.potential_fn(self.unravel(x))

    def log_density_of_sites(self, sites):
        return -self.potential_fn(sites)


def final_loss(losses) -> float | None:
    """The mean finite loss over the last tenth of the steps (the negative ELBO: lower is closer; a skipped step's
    is not finite), None without steps, NaN where none of them was finite."""
    last = np.asarray(losses, dtype=np.float64)[-max(1, len(losses) // 10) :]
    return (float(np.mean(last[np.isfinite(last)])) if np.isfinite(last).any() else float("nan")) if len(last) else None


class FlowEngine(ApproximateEngine):
    package = "flowjax"

    def __init__(self, flow: str):
        if flow not in ("realnvp", "maf"):
            raise ValueError(f"unknown flow {flow!r}")
        self.flow = flow
        self.name = f"flow_{flow}"

    def training(self, jax, problem: Problem, config: RunConfig, key) -> Training:
        """flowjax's ``fit_to_key_based_loss`` (its steps: the ELBO's value and gradient, the optimiser's update) as
        one scan over the steps' keys, to compile ahead: flowjax's own loop runs a jitted step a step from Python."""
        import equinox as eqx
        import paramax
        from flowjax.train.losses import ElboLoss

        key_flow, key_train = jax.random.split(jax.random.wrap_key_data(key))  # flowjax takes typed keys only
        loss_fn = ElboLoss(problem.log_density, num_samples=FLOW_ELBO_DRAWS)
        optimizer = flow_optimizer(config.warmup)
        params, static = eqx.partition(  # as flowjax partitions the flow: its trainable arrays, the rest
            make_flow(self.flow, key_flow, problem.starts[0]),
            eqx.is_inexact_array,
            is_leaf=lambda leaf: isinstance(leaf, paramax.NonTrainable),
        )

        def train(params, opt_state, keys):
            def step(carry, key):
                params, opt_state = carry
                loss, gradient = eqx.filter_value_and_grad(loss_fn)(params, static, key=key)
                updates, opt_state = optimizer.update(gradient, opt_state, params=params)
                return (eqx.apply_updates(params, updates), opt_state), loss

            return jax.lax.scan(step, (params, opt_state), keys)

        def finish(output):
            (params, _), losses = output
            facts = {
                "flow_layers": FLOW_LAYERS,
                "nn_width": NN_WIDTH,
                "learning_rate": f"{FLOW_LEARNING_RATE:g}, cosine decay to 0",
                "gradient_clip": FLOW_GRADIENT_CLIP,
                "elbo_draws": FLOW_ELBO_DRAWS,
                "final_loss": final_loss(losses),
                "non_finite_losses": int(np.sum(~np.isfinite(np.asarray(losses)))),  # steps skipped for it
                "gradients": config.warmup * FLOW_ELBO_DRAWS,
            }
            return (eqx.combine(params, static), problem.unravel), facts

        return Training(train, (params, optimizer.init(params), jax.random.split(key_train, config.warmup)), finish)

    def draw(self, jax, fitted, key, n: int):
        flow, unravel = fitted
        points, log_q = flow.sample_and_log_prob(jax.random.wrap_key_data(key), (n,))
        return jax.vmap(unravel)(points), log_q


def flow_optimizer(steps: int):
    """Adam for the flow's ELBO, made stable where a centred hierarchy's funnels make the ELBO's gradient spike
    (the centred IRT-2PL at default, 10,000 steps of Adam at a constant 1e-3: losses of 1e114, then NaN, or a
    NaN step in three): each step's gradient clipped to a global norm of ``FLOW_GRADIENT_CLIP``, the step size
    decaying to 0 (cosine, as ADVI's), and a step whose gradient is not finite (its ELBO draws reached where the
    target's log density is not, a scale at 0) skipped, never applied, and counted by the caller."""
    import optax

    clipped_adam = optax.chain(
        optax.clip_by_global_norm(FLOW_GRADIENT_CLIP),
        optax.adam(optax.cosine_decay_schedule(FLOW_LEARNING_RATE, max(steps, 1))),
    )
    return optax.apply_if_finite(clipped_adam, max_consecutive_errors=steps + 1)


def make_flow(flow: str, key, start_point):
    """An untrained flow over the unconstrained space, its standard normal base centred at the first chain's start
    point (where the samplers begin)."""
    from flowjax.distributions import Normal
    from flowjax.flows import coupling_flow, masked_autoregressive_flow

    build = coupling_flow if flow == "realnvp" else masked_autoregressive_flow
    return build(key, base_dist=Normal(start_point, 1.0), flow_layers=FLOW_LAYERS, nn_width=NN_WIDTH)


class AdviEngine(ApproximateEngine):
    resample = False

    def __init__(self, family: str):
        if family not in ("meanfield", "fullrank"):
            raise ValueError(f"unknown ADVI family {family!r}")
        self.family = family
        self.name = f"advi_{family}"

    def training(self, jax, problem: Problem, config: RunConfig, key) -> Training:
        """NumPyro's ``SVI.run`` without a progress bar (the guide initialised, then a scan of ``SVI.update``), its
        scan compiled ahead: the guide's initialisation, which traces the model, is the setup."""
        import optax
        from numpyro.infer import SVI, Trace_ELBO, init_to_uniform
        from numpyro.infer.autoguide import AutoDiagonalNormal, AutoMultivariateNormal
        from numpyro.optim import optax_to_numpyro

        guide_class = AutoDiagonalNormal if self.family == "meanfield" else AutoMultivariateNormal
        guide = guide_class(problem.model, init_loc_fn=init_to_uniform(radius=config.init_radius))
        # a step size that decays to zero, as ADVI's own sequence does (Kucukelbir et al. 2017): with a fixed one the
        # last iterate keeps the noise of one-draw gradients, and so would every draw of q
        optimizer = optax_to_numpyro(optax.adam(optax.cosine_decay_schedule(ADVI_LEARNING_RATE, config.warmup)))
        svi = SVI(problem.model, guide, optimizer, Trace_ELBO(num_particles=ADVI_ELBO_DRAWS))

        def train(state):
            return jax.lax.scan(lambda state, _: svi.update(state, **problem.data), state, None, length=config.warmup)

        def finish(output):
            state, losses = output
            facts = {
                "guide": guide_class.__name__,
                "learning_rate": f"{ADVI_LEARNING_RATE:g}, cosine decay to 0",
                "elbo_draws": ADVI_ELBO_DRAWS,
                "final_loss": final_loss(losses),
                "gradients": config.warmup * ADVI_ELBO_DRAWS,
            }
            return (guide, guide.get_posterior(svi.get_params(state))), facts

        return Training(train, (svi.init(key, **problem.data),), finish)

    def draw(self, jax, fitted, key, n: int):
        guide, posterior = fitted
        if posterior.batch_shape:  # AutoDiagonalNormal's posterior: independent normals, one per coordinate
            posterior = posterior.to_event(1)
        latent = posterior.sample(key, (n,))
        return jax.vmap(guide._unpack_latent)(latent), posterior.log_prob(latent)


class PathfinderEngine(ApproximateEngine):
    package = "blackjax"
    name = "pathfinder"

    def training(self, jax, problem: Problem, config: RunConfig, key) -> Training:
        import blackjax

        def one_path(start_and_key):
            start, path_key = start_and_key
            state, info = blackjax.vi.pathfinder.approximate(
                path_key, problem.log_density, start, num_samples=PATHFINDER_ELBO_DRAWS, maxiter=config.warmup
            )
            return state, jax.numpy.sum(jax.numpy.isfinite(info.path.elbo))

        def paths(starts, keys):  # one path at a time: each holds its ELBO's draws, (iterations x 25 x dimension)
            return jax.lax.map(one_path, (starts, keys))

        def finish(output):
            states, iterations = output
            facts = {
                "paths": config.chains,
                "elbo_draws": PATHFINDER_ELBO_DRAWS,
                "lbfgs_iterations": [int(i) for i in np.asarray(iterations)],
            }
            return (states, problem.unravel), facts

        return Training(paths, (problem.starts, jax.random.split(key, config.chains)), finish)

    def draw(self, jax, fitted, key, n: int):
        """n draws, an equal share from each path's normal, each with its own path's log q (multi-path Pathfinder
        weighs a draw by the approximation that made it)."""
        import blackjax

        states, unravel = fitted
        paths = jax.tree.leaves(states)[0].shape[0]
        per_path = n // paths

        def one_path(state_and_key):
            state, path_key = state_and_key
            return blackjax.vi.pathfinder.sample(path_key, state, per_path)

        points, log_q = jax.lax.map(one_path, (states, jax.random.split(key, paths)))
        points, log_q = points.reshape(paths * per_path, -1), log_q.reshape(-1)
        return jax.vmap(unravel)(points), log_q


def flow_realnvp(front_end: str = "flowjax") -> FlowEngine:
    return FlowEngine("realnvp")


def flow_maf(front_end: str = "flowjax") -> FlowEngine:
    return FlowEngine("maf")


def advi_meanfield(front_end: str = "numpyro") -> AdviEngine:
    return AdviEngine("meanfield")


def advi_fullrank(front_end: str = "numpyro") -> AdviEngine:
    return AdviEngine("fullrank")


def pathfinder(front_end: str = "blackjax") -> PathfinderEngine:
    return PathfinderEngine()
