"""The terms the report uses, defined once: the HTML report and its Markdown summary print the same list."""

from __future__ import annotations

from stanjax.reports.stats import LEVEL, MIN_BLOCKS
from stanjax.runner.measure import validity

RHAT = getattr(validity, "RHAT_MAX", 1.01)
DIVERGENCES = getattr(validity, "DIVERGENCE_MAX_SHARE", 0.01)
K = getattr(validity, "K_REFERENCE", 5.0)

TERMS = (
    (
        "Stan-CPU (bundled Stan)",
        "Stan's NUTS as pystan 3 ships it: the Stan program compiled by httpstan (the "
        "server inside pystan) into a Python extension, which stanjax drives directly, every chain at once in its own "
        "forked process. Built as CmdStan builds a program: STAN_THREADS only for programs that run threads. The "
        "baseline of every “× Stan-CPU”.",
    ),
    (
        "httpstan (httpstan-CPU)",
        "The bundled Stan as httpstan builds it (STAN_THREADS in every program, which costs a program of many small "
        "autodiff nodes up to 2× a gradient in a Python extension) and as stanjax drove it before 2026-11-28 (its "
        "reader woke for every message the chains sent, taking CPU from them). Most records were made so; never "
        "pooled with Stan-CPU. Where CmdStan sampled a program faster on a machine, every ratio over it says so.",
    ),
    (
        "CmdStan (CmdStan-CPU)",
        "Stan's command-line interface, run through cmdstanpy; built against the same Stan "
        "library, it gives the same draws for the same seed. Compared with the bundled Stan in the Stan side section.",
    ),
    (
        "PyStan (PyStan-CPU)",
        "The bundled Stan driven through pystan's own in-process HTTP server (progress polling, "
        "compressed messages), as records were made before stanjax drove httpstan itself. Kept to read those records; "
        "never pooled with Stan-CPU and never a claim's evidence.",
    ),
    (
        "NumPyro, BlackJAX",
        "Samplers written in JAX. NumPyro-CPU runs float64 with one CPU device per chain; "
        "NumPyro-GPU float32 with the chains vectorised on one GPU. BlackJAX-NUTS adapts like Stan, one adaptation "
        "per chain; BlackJAX-ChEES runs jittered HMC whose trajectory length ChEES tunes across the whole batch of "
        "chains (a many-chain, GPU-friendly adaptive HMC).",
    ),
    ("JAX-GPU, JAX-CPU", "Any JAX engine on a GPU, or on the CPU; where several ran, NumPyro is the one shown."),
    (
        "NUTS",
        "The No-U-Turn Sampler: Hamiltonian Monte Carlo that doubles each trajectory until it turns back on "
        "itself (tree depth at most 10: up to 1,023 leapfrog steps per draw). Every engine here runs it, except BlackJAX-ChEES.",
    ),
    ("RWMH", "Random-walk Metropolis–Hastings: a proposal, an accept/reject test, no gradient (rlouf's claim)."),
    (
        "gradient, leapfrog step",
        "One evaluation of the log density and its gradient: NUTS takes one per leapfrog "
        "step. “ms per gradient” is the sampling phase's share of the user clock ÷ leapfrog steps summed over all "
        "chains (the whole run's throughput); one chain's step takes that × the chains running at once.",
    ),
    (
        "ESS (bulk, tail)",
        "Effective sample size: how many independent draws the correlated draws are worth "
        "(arviz, rank-normalised); bulk for the centre of the distribution, tail for its 5 % and 95 % quantiles. The "
        "report takes the smallest over all parameters.",
    ),
    (
        "ESS/s",
        "Minimum bulk ESS ÷ user seconds (warmup and sampling), compile excluded. It factors exactly, run by "
        "run, into ESS per gradient (the sampler) × gradients per second while sampling (a gradient's cost) × the "
        "share of the run spent sampling (the rest is warmup).",
    ),
    (
        "ESS per joule",
        "Minimum bulk ESS ÷ the joules of the run's metered span (the sample call: warmup and "
        "sampling, and a JAX engine's JIT compile, which happens inside it), summed over the sources the worker could "
        "read: every GPU through NVML and every CPU package through RAPL, whole devices, other processes' work "
        "included. “Not measured” where none could be read (no NVML, RAPL absent or readable by root only).",
    ),
    (
        "warm, cold",
        "Warm: compile time excluded. Cold: each repeat also pays the uncached compile time measured "
        "for that engine and model (“not measured” when every run compiled from a cache).",
    ),
    (
        "user s, sampler s",
        "Two clocks kept alike for every engine. User seconds: data handed over until the draws "
        "are host arrays (what a user waits for; ESS/s divides by it). Sampler seconds: the sampler's own warmup and "
        "sampling (Stan's per-chain elapsed times; JAX's device time to block_until_ready). Their difference is the "
        "front end's overhead.",
    ),
    (
        "-f32, -tf32",
        "float32 runs (float64 is the unmarked default). -tf32: float32 with JAX's default GPU matrix "
        "products, which run as TensorFloat-32 (a 10-bit mantissa) on NVIDIA Ampere and later GPUs; the suspect in "
        "NUTS failing R-hat on large logistic regressions. -f32 asks for full float32 products.",
    ),
    (
        "-vectorized, parallel",
        "How chains run: vectorised into one batched computation, or in parallel, one "
        "device (or process) per chain. A label names a chain method only when it is not the engine's default.",
    ),
    (
        "R-hat",
        f"Rank-normalised split R-hat: the chains' between- against within-chain spread; above {RHAT} a run "
        "is invalid.",
    ),
    (
        "divergence",
        f"A leapfrog trajectory whose energy error blew up: the sampler could not follow the "
        f"posterior's curvature there. More than {DIVERGENCES:.0%} of the draws and a run is invalid.",
    ),
    (
        "valid run",
        f"A completed run that passed every gate: R-hat ≤ {RHAT}, every ESS finite, divergences ≤ "
        f"{DIVERGENCES:.0%} of draws, and every posterior mean (and sd, where recorded) within {K:g} combined Monte "
        "Carlo standard errors (MCSE) of the reference. Invalid runs are shown and never enter a ratio.",
    ),
    (
        "reference",
        "The posterior a run is checked against: our own long Stan run (8 chains × 5,000 draws), or an "
        "external ground truth (inference-gym's) where one exists.",
    ),
    (
        "block",
        "Both sides of a ratio run once, back to back, in the order alternating from block to block; a "
        "ratio is taken within a block, and only between runs of one campaign that were measured on a quiet machine.",
    ),
    (
        "interval",
        f"For one model, the exact order-statistic {round(LEVEL * 100)} % interval of the median of its "
        f"block ratios (at least {MIN_BLOCKS} blocks); for a geometric mean, a percentile bootstrap resampling each "
        "model's blocks (fixed seed: the same records give the same interval).",
    ),
    (
        "insufficient data",
        f"A ratio from fewer than {MIN_BLOCKS} paired blocks, or from tiny data (a smoke test): shown, never judged.",
    ),
    (
        "regime",
        "What dominates a gradient's cost (data-parallel likelihood, tiny model, sequential recursion, ...): "
        "the report groups models by it, because the answer depends on it.",
    ),
    (
        "geometric mean",
        "The mean of the per-model ratios on a log scale; always secondary to them and stated with "
        "its model set, since one model can pull it far from the rest.",
    ),
    (
        "size (tiny, small, default, large)",
        "A model's data-size presets: tiny for smoke tests, small for the quick "
        "suite, default for the real comparison, large for the published benchmark sizes.",
    ),
    (
        "roofline",
        "The time a gradient would take if reading the design matrix twice at the GPU's peak memory "
        "bandwidth were all it did: a lower bound on ms per gradient.",
    ),
)
