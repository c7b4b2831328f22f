"""posteriordb's posterior dogs-dogs: its Stan program and data set as published, with no reference posterior in
posteriordb: make one with `stanjax reference` (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid
out by `stanjax import dogs-dogs --posteriordb /tmp/posteriordb`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "dogs-dogs"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "dogs.json")

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Dogs' shock avoidance, posteriordb",
    description="posteriordb's dogs-dogs (arm book, stan examples, pathfinder paper).",
    regime=(
        "small logistic model: 3 parameters, 750 trials; its published program also stores 2,250 "
        "transformed parameters a draw"
    ),
    parameters=(Parameter("beta", (3,)),),
    sizes=posteriordb.SIZES,
    generate=generate,
)
