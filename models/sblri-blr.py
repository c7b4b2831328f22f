"""posteriordb's posterior sblri-blr: its Stan program and data set as published, and its reference posterior as an
outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax import sblri-blr
--posteriordb /tmp/pdbwt`.

2,000 draws per chain at every preset (``min_draws``; every preset is the one data set), where the suites take 1,000:
sigma mixes slowly here (the worst parameter: bulk ESS 541-873 of 4 x 1,000 draws, while the betas' ESS exceeds the
draws), so a converged run's largest R-hat sits near the 1.01 gate. `stanjax check sblri-blr` at 4 chains x 1,000 draws:
Stan's third run failed it (max R-hat 1.013 on sigma, min bulk ESS 651, no divergences, every other gate passed,
posteriordb's reference included), the other five runs 1.002-1.008. At 2,000 draws all six passed (max R-hat
1.0017-1.0045, min bulk ESS 1,108-1,270): the advice for R-hat above 1.01 (run longer), the same on both engines."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "sblri-blr"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "sblri.json", entries=("N", "D", "X", "y"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Bayesian linear regression (sblri), posteriordb",
    variant_of="Bayesian linear regression (sblr)",
    description="posteriordb's sblri-blr (linear regression).",
    regime="small linear regression: N = 100, D = 5; per-call overhead dominates",
    parameters=(Parameter("beta", ("D",)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    min_draws={size: 2_000 for size in posteriordb.SIZES},
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "sblri-blr.reference.json", SPEC_ID, generate),
)
