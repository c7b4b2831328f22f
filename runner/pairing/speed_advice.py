"""Where a speed gap between Stan and NumPyro comes from, in words a Stan user can act on (``stanjax check``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from stanjax.reports.stats import MIN_BLOCKS, Ratio


def speed_advice(rows: list[dict], stan_file: Path, shown_as: Path | str, ratio: Ratio | None) -> list[str]:
    """Where a speed gap comes from. ESS/s is ESS per gradient over the cost of a gradient, so NumPyro / Stan
    ESS/s splits into the two: the gradient's cost ratio and the sampler's ESS-per-gradient ratio (``ratio``: the
    speed ratio the check took, None where no repeat had valid runs of both). Then the Stan program's model-block
    loops that hold sampling statements: element-by-element terms are what the Stan User's Guide's efficiency
    chapter has one vectorised statement replace."""
    stan, numpyro = (next(row for row in rows if row["engine"] == name) for name in ("Stan", "NumPyro"))
    advice = []
    with np.errstate(divide="ignore", invalid="ignore"):
        gradient = np.float64(stan["ms_per_gradient"]) / numpyro["ms_per_gradient"]
        sampler = np.float64(numpyro["ess_per_1000_gradients"]) / stan["ess_per_1000_gradients"]
    if np.isfinite(gradient) and np.isfinite(sampler) and gradient > 0 and sampler > 0:
        larger = "the cost of a gradient" if abs(np.log(gradient)) >= abs(np.log(sampler)) else "the sampler"
        advice.append(
            f"where the gap comes from: {gradient:.3g} from the cost of a "
            f"gradient (Stan {figure(stan['ms_per_gradient'])} ms, NumPyro "
            f"{figure(numpyro['ms_per_gradient'])} ms) x {sampler:.3g} from the sampler (ESS per 1000 "
            f"gradients: Stan "
            f"{figure(stan['ess_per_1000_gradients'])}, NumPyro {figure(numpyro['ess_per_1000_gradients'])})"
            f": {larger} makes most of the difference "
            + (
                "(medians over the runs: the speed ratio above is the median over paired repeats, so the two "
                "factors' product need not equal it)"
                if ratio is not None
                else "(medians over the completed runs, valid or not: no speed ratio was taken, no repeat had valid "
                "runs of both)"
            )
        )
    advice += [
        f"{shown_as}, line {line}: a loop of sampling statements, one element at a time; where its "
        "terms vectorise, one vectorised statement (y ~ normal(mu, sigma) over whole vectors) is faster"
        for line in sampling_loops(stan_file.read_text())
    ]
    return advice


def nutpie_split(records: list) -> list[str]:
    """With nutpie's runs beside the pair (``--engines``): what a Stan user gains by nutpie on the same program, and
    the gap split with one sampler on both programs: the gradient as nutpie calls it (nutpie-JAX ÷ nutpie-Stan) and
    the sampler (NumPyro ÷ nutpie-JAX), each a paired median of ESS/s, the larger named."""
    from stanjax.runner.pairing.agreement import speed_ratio

    engines = {r.engine for r in records}
    if not engines & {"nutpie_stan", "nutpie_jax"}:
        return []
    user = speed_ratio(records, "nutpie_stan", "stan") if "nutpie_stan" in engines else None
    gradient = speed_ratio(records, "nutpie_jax", "nutpie_stan")
    sampler = speed_ratio(records, "numpyro", "nutpie_jax") if "nutpie_jax" in engines else None
    lines = []
    if "nutpie_stan" in engines:
        lines.append(
            f"nutpie on your Stan program: nutpie-Stan / Stan ESS/s {ratio_text(user)}"
            if user
            else "nutpie on your Stan program: no ratio (no repeat with valid runs of both)"
        )
    if gradient and sampler:
        larger = "the gradient" if abs(np.log(gradient.value)) >= abs(np.log(sampler.value)) else "the sampler"
        lines.append(
            f"with one sampler on both programs: the gradient as nutpie calls it, nutpie-JAX / nutpie-Stan ESS/s "
            f"{ratio_text(gradient)}, x the sampler, NumPyro / nutpie-JAX {ratio_text(sampler)}: {larger} makes "
            "most of the difference (nutpie calls JAX's gradient from Python at every leapfrog step, so where a "
            "gradient is cheap its part is that call, not JAX's autodiff)"
        )
    elif "nutpie_jax" in engines:
        if sampler:
            lines.append(f"the sampler alone (one gradient): NumPyro / nutpie-JAX ESS/s {ratio_text(sampler)}")
        if gradient is None:
            lines.append(
                "the gradient alone: not measured (nutpie_stan beside nutpie_jax measures it)"
                if "nutpie_stan" not in engines
                else "the gradient alone: no repeat with valid runs of nutpie-JAX and nutpie-Stan"
            )
        if sampler is None:
            lines.append("the sampler alone: no repeat with valid runs of NumPyro and nutpie-JAX")
    return lines


def ratio_text(ratio: Ratio) -> str:
    """A paired ratio with its interval, or its repeats where too few for one."""
    if ratio.blocks >= MIN_BLOCKS:
        return f"{figure(ratio.value)} (90 % interval {figure(ratio.low)} to {figure(ratio.high)})"
    return f"{figure(ratio.value)} ({ratio.blocks} paired repeat{'s' if ratio.blocks > 1 else ''})"


def sampling_loops(program: str) -> list[int]:
    """Lines of the model block's outermost ``for`` loops whose body holds a ``~`` or ``target +=`` statement."""
    text = re.sub(
        r"//[^\n]*|#[^\n]*", "", re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), program, flags=re.S)
    )
    model = re.search(r"\bmodel\s*\{", text)
    if not model:
        return []
    lines, position, depth = [], model.end(), 1
    while position < len(text) and depth:
        loop = re.compile(r"\bfor\s*\(|[{}]").search(text, position)
        if not loop:
            break
        if loop.group() == "{":
            depth, position = depth + 1, loop.end()
            continue
        if loop.group() == "}":
            depth, position = depth - 1, loop.end()
            continue
        body_end = _statement_end(text, _closing(text, loop.end() - 1))
        if re.search(r"~|target\s*\+=", text[loop.start() : body_end]):
            lines.append(text.count("\n", 0, loop.start()) + 1)
        position = body_end
    return lines


def _closing(text: str, opening: int) -> int:
    """The index after the bracket that closes the one at ``opening``."""
    pairs, depth = {"(": ")", "{": "}"}, 0
    close = pairs[text[opening]]
    for index in range(opening, len(text)):
        depth += (text[index] == text[opening]) - (text[index] == close)
        if depth == 0:
            return index + 1
    return len(text)


def _statement_end(text: str, start: int) -> int:
    """The end of the statement that starts after ``start`` (a loop's body): a block, or up to its ``;``."""
    spaces = re.compile(r"\s*").match(text, start)
    assert spaces is not None, "\\s* matches at any position, if only the empty string"
    following = spaces.end()
    if following < len(text) and text[following] == "{":
        return _closing(text, following)
    if re.match(r"for\s*\(", text[following:]):
        return _statement_end(text, _closing(text, text.index("(", following)))
    semicolon = text.find(";", following)
    return len(text) if semicolon < 0 else semicolon + 1


def figure(value: float) -> str:
    """Three significant digits, without an exponent from 0.001 up."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
