"""The runtime lock (requirements-run.lock, what `make report` installs) is the whole lock's part that pyproject's
dependencies pull in: the same pins and hashes, none of the tests' or the docs' tools."""

import re
import tomllib

from stanjax.models import ROOT


def pins(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    """name -> (version, hashes) of each requirement in a uv-compiled lock."""
    found = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):  # a requirement starts in the first column
        if match := re.match(r"([A-Za-z0-9_.\-]+)==(\S+)", block):
            found[normalised(match[1])] = (match[2], frozenset(re.findall(r"sha256:[0-9a-f]{64}", block)))
    return found


def normalised(requirement: str) -> str:
    """A requirement's distribution name as both locks spell it: lower case, '-' for '_' and '.', no extras."""
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-").replace(".", "-")


def differences(whole: dict, runtime: dict) -> list[str]:
    return sorted(name for name, pin in runtime.items() if whole.get(name) != pin)


def test_the_runtime_lock_pins_what_the_whole_lock_pins_and_no_test_tools():
    whole = pins((ROOT / "requirements.lock").read_text())
    runtime = pins((ROOT / "requirements-run.lock").read_text())
    assert len(runtime) > 50 and differences(whole, runtime) == []
    planted = {**runtime, "numpy": ("1.0.0", runtime["numpy"][1])}  # a runtime lock left behind by a `make lock`
    assert differences(whole, planted) == ["numpy"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {normalised(d) for d in project["dependencies"]} <= set(runtime)
    tools = {normalised(d) for extra in project["optional-dependencies"].values() for d in extra}
    assert tools <= set(whole) and not tools & set(runtime)
