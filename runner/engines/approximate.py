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
timed as its warmup. Then ``IMPORTANCE_DRAWS`` times as many draws as the run keeps are drawn and weighted, their
weights Pareto-smoothed (arviz-stats' PSIS: below k-hat 0.7 importance-sampling estimates converge at a usable
rate), and ``chains x draws`` kept: resampled by weight with replacement, or, for ADVI, the first of q's own. They
are laid out as (chains, draws) for the common code path, but they are independent draws, not chains: an
approximate engine's gates are its k-hat and, beside it, its errors in reference sds
(:func:`stanjax.runner.measure.validity.evaluate_approximate`), never R-hat or ESS.
"""

from __future__ import annotations

import time
from importlib import metadata

import numpy as np

from stanjax import jax_models
from stanjax.models import ModelSpec
from stanjax.runner.core.config import Placement, RunConfig
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings
from stanjax.runner.engines.jax_setup import CompileClock, device_info, initial_points, start_jax

IMPORTANCE_DRAWS = 10  # draws weighted per draw kept: resampling keeps few repeats where k-hat is small
FLOW_LAYERS = 8  # flowjax's defaults for both flows
NN_WIDTH = 50
FLOW_LEARNING_RATE = 1e-3  # Adam's first step size, as flowjax's variational-inference example, decaying to 0
FLOW_GRADIENT_CLIP = 10.0  # the largest global norm of a step's gradient: a spike moves the weights no further
FLOW_ELBO_DRAWS = 16  # draws of the flow per training step, each one gradient of the target
ADVI_LEARNING_RATE = 1e-2  # Adam's first step size, as NumPyro's SVI examples, decaying to 0 (cosine)
ADVI_ELBO_DRAWS = 1  # Trace_ELBO's default, as Stan's ADVI (grad_samples = 1)
PATHFINDER_ELBO_DRAWS = 25  # per point of the path, to pick the best normal on it: Stan's num_elbo_draws


class ApproximateEngine:
    """The common part: start JAX, fit (``fit``), draw and weigh (``draw``), smooth, keep, time, record.

    ``fit(jax, problem, config, key) -> (fitted, facts)`` blocks until the fit is done; ``facts`` go into the
    record (with ``"gradients"``, the target's gradient evaluations, where known). ``draw(jax, fitted, key, n) ->
    (unconstrained sites, log q)`` is jitted with the target's log density."""

    name: str
    resample = True  # keep draws resampled by their smoothed weights (False: the first of q's own draws)
    package = "numpyro"

    def fit(self, jax, problem: Problem, config: RunConfig, key) -> tuple[object, dict]:
        """Each engine's own (see the class's docstring)."""
        raise NotImplementedError

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

        clock = CompileClock()
        start = time.perf_counter()
        fitted, facts = self.fit(jax, problem, config, key_fit)
        fitting_wall = time.perf_counter() - start
        fitting_compile = clock.seconds()
        clock.reset()

        kept = config.chains * config.draws
        n_drawn = IMPORTANCE_DRAWS * kept

        def draw_and_weigh(key):  # the fitted approximation enters as constants
            sites, log_q = self.draw(jax, fitted, key, n_drawn)
            return sites, jax.vmap(problem.log_density_of_sites)(sites) - log_q

        start = time.perf_counter()
        sites, log_weights = jax.block_until_ready(jax.jit(draw_and_weigh)(key_draw))
        drawing_wall = time.perf_counter() - start
        drawing_compile = clock.seconds()

        start = time.perf_counter()
        chosen, weighing = weigh(log_weights, kept, seed, self.resample)
        constrained = jax.vmap(problem.postprocess_fn)(jax.tree.map(lambda site: site[chosen], sites))
        draws = {
            name: np.asarray(value, dtype=np.float64).reshape(config.chains, config.draws, *value.shape[1:])
            for name, value in constrained.items()
        }
        keeping_s = time.perf_counter() - start

        warmup_s = fitting_wall - fitting_compile
        sampling_s = drawing_wall - drawing_compile
        timings = Timings(
            compile_s=fitting_compile + drawing_compile,
            warmup_s=warmup_s,
            sampling_s=sampling_s,
            user_s=warmup_s + sampling_s + keeping_s,
            source="warmup: the fit's wall (training or L-BFGS), sampling: drawing and weighing the "
            "approximation's draws to block_until_ready, each less jax.monitoring compile spans; user: the same "
            "plus Pareto smoothing, keeping (resampling) and constraining the draws into host arrays",
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

    def fit(self, jax, problem: Problem, config: RunConfig, key):
        from flowjax.train import fit_to_key_based_loss
        from flowjax.train.losses import ElboLoss

        key_flow, key_train = jax.random.split(jax.random.wrap_key_data(key))  # flowjax takes typed keys only
        flow, losses = fit_to_key_based_loss(
            key_train,
            make_flow(self.flow, key_flow, problem.starts[0]),
            loss_fn=ElboLoss(problem.log_density, num_samples=FLOW_ELBO_DRAWS),
            steps=config.warmup,
            optimizer=flow_optimizer(config.warmup),
            show_progress=False,
        )
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
        return (flow, problem.unravel), facts

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

    def fit(self, jax, problem: Problem, config: RunConfig, key):
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
        result = svi.run(key, config.warmup, progress_bar=False, **problem.data)
        jax.block_until_ready(result.params)
        facts = {
            "guide": guide_class.__name__,
            "learning_rate": f"{ADVI_LEARNING_RATE:g}, cosine decay to 0",
            "elbo_draws": ADVI_ELBO_DRAWS,
            "final_loss": final_loss(result.losses),
            "gradients": config.warmup * ADVI_ELBO_DRAWS,
        }
        return (guide, guide.get_posterior(result.params)), facts

    def draw(self, jax, fitted, key, n: int):
        guide, posterior = fitted
        if posterior.batch_shape:  # AutoDiagonalNormal's posterior: independent normals, one per coordinate
            posterior = posterior.to_event(1)
        latent = posterior.sample(key, (n,))
        return jax.vmap(guide._unpack_latent)(latent), posterior.log_prob(latent)


class PathfinderEngine(ApproximateEngine):
    package = "blackjax"
    name = "pathfinder"

    def fit(self, jax, problem: Problem, config: RunConfig, key):
        import blackjax

        def one_path(start_and_key):
            start, path_key = start_and_key
            state, info = blackjax.vi.pathfinder.approximate(
                path_key, problem.log_density, start, num_samples=PATHFINDER_ELBO_DRAWS, maxiter=config.warmup
            )
            return state, jax.numpy.sum(jax.numpy.isfinite(info.path.elbo))

        # one path at a time: each holds its path's draws for the ELBO, (iterations x 25 x dimension) numbers
        states, iterations = jax.lax.map(one_path, (problem.starts, jax.random.split(key, config.chains)))
        jax.block_until_ready(states)
        facts = {
            "paths": config.chains,
            "elbo_draws": PATHFINDER_ELBO_DRAWS,
            "lbfgs_iterations": [int(i) for i in np.asarray(iterations)],
        }
        return (states, problem.unravel), facts

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


def weigh(log_weights, kept: int, seed: int, resample: bool) -> tuple[np.ndarray, dict]:
    """The draws to keep, by index, and the record's facts of their weighing: the log weights log p - log q of
    every draw made Pareto-smoothed (k-hat), then ``kept`` of the draws resampled by smoothed weight with
    replacement, or, with ``resample`` False, the first ``kept`` of q's own. Both sides' approximations go through
    here (:mod:`stanjax.runner.engines.stan_approximate` too)."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    smoothed, khat = pareto_smoothed(log_weights)
    if resample:
        chosen = np.random.default_rng(seed).choice(len(log_weights), size=kept, p=np.exp(smoothed))
    else:
        chosen = np.arange(kept)
    return chosen, {
        "importance_draws": len(log_weights),
        "kept": "resampled by smoothed weight, with replacement" if resample else "q's own draws",
        "khat": khat,
        "importance_ess": importance_ess(smoothed) if np.isfinite(log_weights).any() else 0.0,
        "non_finite_weights": int(np.sum(~np.isfinite(log_weights))),
    }


def pareto_smoothed(log_weights: np.ndarray) -> tuple[np.ndarray, float]:
    """PSIS: normalised log weights, their largest tail Pareto-smoothed, and the tail's k-hat (arviz-stats). A
    non-finite weight (the target undefined where q put a draw) counts as weight zero. Where no weight is finite,
    or the tail cannot be fitted because one draw outweighs the rest by more than a float can hold (a proposal far
    from the target: every other weight is 0 beside it), k-hat is inf and the weights are left unsmoothed."""
    from arviz_stats.base import array_stats
    from scipy.special import logsumexp

    finite = np.isfinite(log_weights)
    if not finite.any():
        return np.full(log_weights.shape, -np.log(len(log_weights))), float("inf")
    raw = np.where(finite, log_weights, -np.inf)
    # arviz-stats smooths importance weights given as the negatives of log likelihoods (its PSIS-LOO convention)
    finite_smoothed, khat = array_stats.psislw(-log_weights[finite])
    if not (np.isfinite(khat) and np.all(np.isfinite(finite_smoothed))):
        return raw - logsumexp(raw), float("inf")
    smoothed = np.full(log_weights.shape, -np.inf)
    smoothed[finite] = finite_smoothed
    return smoothed - logsumexp(smoothed), float(khat)


def importance_ess(normalised_log_weights: np.ndarray) -> float:
    """Kish's effective sample size of the weighted draws, 1 / sum w^2 (the weights normalised). Where no weight
    was finite the run's is 0: :func:`pareto_smoothed` then spreads the weights evenly only to have draws to keep."""
    return float(1.0 / np.sum(np.exp(2.0 * normalised_log_weights)))


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
