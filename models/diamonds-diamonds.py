"""posteriordb's posterior diamonds-diamonds: its Stan program and data set as published, and its reference posterior
as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax import
diamonds-diamonds --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "diamonds-diamonds"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "diamonds.json", entries=("N", "Y", "K", "X", "prior_only"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Diamond prices regression (brms), posteriordb",
    description="posteriordb's diamonds-diamonds (stan benchmark, linear regression, pathfinder paper).",
    regime="data-parallel likelihood: a linear regression, N = 5,000 rows x 24 correlated predictors; a 5,000 x 24 matrix-vector product per gradient, long trees",
    parameters=(Parameter("b", ("K - 1",)), Parameter("Intercept"), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "diamonds-diamonds.reference.json", SPEC_ID, generate),
)
