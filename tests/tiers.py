"""Which models' own tests ``make test`` runs: every model made here, and of the posteriors carried from posteriordb
one of each way ``stanjax import`` lays one out; the other carried posteriors' tests (one a model: its files, data,
static checks, density) run in the zoo tier (``make test-zoo``), so ``make test`` takes as long with 7 posteriordb
posteriors as with 45."""

from __future__ import annotations

from functools import cache

from stanjax import models
from stanjax.models import posteriordb

# As published with a reference (sblrc-blr), with no reference (dogs-dogs), changed to sample at all (arma-arma11),
# rewritten in today's Stan with generated sizes beside posteriordb's data (hmm_example-hmm_example).
CARRIED_IN_MAKE_TEST = frozenset({"sblrc-blr", "dogs-dogs", "arma-arma11", "hmm_example-hmm_example"})


@cache
def zoo_only(model_id: str) -> bool:
    """Whether a model's own tests run in the zoo tier alone: a posteriordb posterior (its program's header names
    posteriordb) not in ``CARRIED_IN_MAKE_TEST``; False for an ID the zoo does not hold."""
    spec = models.registry().get(model_id)
    if spec is None or spec.home is not None or model_id in CARRIED_IN_MAKE_TEST:
        return False
    return posteriordb.carried(spec)
