"""posteriordb's posterior sblrc-blr: its Stan program and data set as published, and its reference posterior as an
outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax import sblrc-blr
--posteriordb /tmp/posteriordb`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "sblrc-blr"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "sblrc.json")

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Bayesian linear regression, posteriordb",
    variant_of="Bayesian linear regression (sblr)",
    description="posteriordb's sblrc-blr (pathfinder paper, linear regression).",
    regime="small linear regression: N = 100, D = 5; per-call overhead dominates",
    parameters=(Parameter("beta", ("D",)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "sblrc-blr.reference.json", SPEC_ID, generate),
)
