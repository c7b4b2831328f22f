"""posteriordb's posterior kidiq_with_mom_work-kidscore_interaction_z: its Stan program and data set as published, and
its reference posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid
out by `stanjax import kidiq_with_mom_work-kidscore_interaction_z --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "kidiq_with_mom_work-kidscore_interaction_z"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "kidiq_with_mom_work.json", entries=("N", "kid_score", "mom_hs", "mom_iq"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Kid's score, standardised predictors and interaction, posteriordb",
    variant_of="Kid's score regressions (kidiq)",
    description="posteriordb's kidiq_with_mom_work-kidscore_interaction_z (arm book, stan examples, interaction).",
    regime="small linear regression: N = 434, 4 coefficients; per-call overhead dominates",
    parameters=(Parameter("beta", (4,)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(
        CARRIED / "kidiq_with_mom_work-kidscore_interaction_z.reference.json", SPEC_ID, generate
    ),
)
