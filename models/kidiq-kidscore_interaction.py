"""posteriordb's posterior kidiq-kidscore_interaction: its Stan program and data set as published, and its reference
posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax
import kidiq-kidscore_interaction --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "kidiq-kidscore_interaction"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "kidiq.json", entries=("N", "kid_score", "mom_iq", "mom_hs"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Kid's score on mother's high school, IQ and interaction, posteriordb",
    variant_of="Kid's score regressions (kidiq)",
    description="posteriordb's kidiq-kidscore_interaction (arm book, stan examples, interaction).",
    regime="small linear regression: N = 434, 4 coefficients; per-call overhead dominates",
    parameters=(Parameter("beta", (4,)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "kidiq-kidscore_interaction.reference.json", SPEC_ID, generate),
)
