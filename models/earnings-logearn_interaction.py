"""posteriordb's posterior earnings-logearn_interaction: its Stan program and data set as published, and its reference
posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax
import earnings-logearn_interaction --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "earnings-logearn_interaction"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "earnings.json", entries=("N", "earn", "height", "male"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Log earnings on height x sex, posteriordb",
    variant_of="Earnings regressions",
    description="posteriordb's earnings-logearn_interaction (arm book, stan examples, pathfinder paper, interaction).",
    regime="small linear regression: N = 1,192, 4 coefficients; per-call overhead dominates",
    parameters=(Parameter("beta", (4,)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "earnings-logearn_interaction.reference.json", SPEC_ID, generate),
)
