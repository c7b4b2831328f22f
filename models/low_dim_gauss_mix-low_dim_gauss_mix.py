"""posteriordb's posterior low_dim_gauss_mix-low_dim_gauss_mix: its Stan program and data set as published, and its
reference posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by
`stanjax import low_dim_gauss_mix-low_dim_gauss_mix --posteriordb /tmp/posteriordb`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "low_dim_gauss_mix-low_dim_gauss_mix"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "low_dim_gauss_mix.json")

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Two-normal mixture, posteriordb",
    description="posteriordb's low_dim_gauss_mix-low_dim_gauss_mix (stan benchmark, pathfinder paper, mixture model).",
    regime="data-heavy mixture: a log-sum-exp over N = 1,000 observations per gradient",
    parameters=(Parameter("mu", (2,)), Parameter("sigma", (2,)), Parameter("theta")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(
        CARRIED / "low_dim_gauss_mix-low_dim_gauss_mix.reference.json", SPEC_ID, generate
    ),
)
