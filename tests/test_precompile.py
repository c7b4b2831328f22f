"""The test build: a precompiled header the compiler refuses is seen; the programs make test compiles."""

import subprocess
import sys

from stanjax import models
from stanjax.models import ROOT
from tests import precompile

# What GCC 12 printed (-Winvalid-pch) for a header built with -DNDEBUG, used by a compile without it.
REFUSED = (
    "cc1plus: warning: ./pchdir/g0.hpp.gch: not used because `NDEBUG' not defined [-Winvalid-pch]\n"
    "                 from ./pchdir/g0.hpp:1,\n"
)


def test_a_refused_header_is_seen_with_its_reason():
    assert precompile.unused_header(REFUSED) == "`NDEBUG' not defined"
    assert precompile.unused_header("model.cpp:6:25: warning: 'x' is used uninitialized\n") is None


def test_make_test_leaves_the_carried_posteriors_beyond_one_of_each_kind_to_the_zoo_tier():
    """make test's time does not grow with the posteriordb posteriors imported (issue 65): their own tests are
    marked zoo and their programs are not compiled for it, one of each kind aside."""
    from tests.tiers import CARRIED_IN_MAKE_TEST, zoo_only

    left = {model_id for model_id in models.registry() if zoo_only(model_id)}
    assert left and CARRIED_IN_MAKE_TEST <= set(models.registry())
    assert not any(zoo_only(model_id) for model_id in CARRIED_IN_MAKE_TEST)
    assert not zoo_only("eight_schools-eight_schools_noncentered") and not zoo_only("no-such_model")
    kept = precompile.programs(zoo=False)
    assert not {label.split(" ")[0] for label in kept} & left
    assert set(precompile.programs()) - set(kept) >= set(left)
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not zoo", "tests/pairing/test_density.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    assert "[sblrc-blr]" in collected and "[eight_schools-eight_schools_noncentered]" in collected
    assert not [model_id for model_id in left if f"[{model_id}]" in collected]


def test_a_program_shared_by_models_is_compiled_once():
    """posteriordb's nes years share one program: CI compiled it twice at once and a truncated module was left."""
    found = precompile.programs()
    once = precompile.once_each(found)
    assert "nes1980-nes (expert)" in found and "nes1988-nes (expert)" in found
    assert len([label for label in once if label.startswith("nes") and label.endswith("(expert)")]) == 1
    assert f"{precompile.EIGHT_SCHOOLS} (O1)" in once and f"{precompile.EIGHT_SCHOOLS} (x86-64-v2)" in once
    assert len({str(found[label]) for label in once}) <= len(once) < len(found)
