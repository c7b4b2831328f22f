"""What Stan's chains report, read the same way for both back ends (:mod:`stanjax.runner.engines.stan_bundled`,
:mod:`stanjax.runner.engines.stan_cmdstan`): the two clocks from the per-chain elapsed times (``_stan_split``),
the Stan library's version, and what a bundled Stan chain sends: its draws (the draws writer's doubles) and its
logger's JSON lines (elapsed times and errors).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from stanjax.runner.core.config import RunConfig
from stanjax.runner.core.engine_registry import Timings

ELAPSED_RE = re.compile(r"([0-9.eE+-]+) seconds \((Warm-up|Sampling)\)")
ITERATION_RE = re.compile(rb"Iteration:\s*(\d+) / (\d+) \[\s*\d+%\]\s*\((Warmup|Sampling)\)")


def _stan_split(
    per_chain: list[dict[str, float]], user_s: float, compile_s: float, cached: bool, interface: str, config: RunConfig
) -> Timings:
    """Timings from the sample call's wall (``user_s``) and Stan's per-chain elapsed times. Where every chain was
    faster than Stan's clock (it reports milliseconds: 0 for a one-parameter model's tiny run), the sampler time
    is the call's wall, split in the ratio of warmup to sampling iterations, and the source says so."""
    sampler_s = max(c["warmup"] + c["sampling"] for c in per_chain)
    warmup = sum(c["warmup"] for c in per_chain)
    total = warmup + sum(c["sampling"] for c in per_chain)
    source = (
        f"user: {interface} sample-call wall, data in to draws in arrays; sampler: the slowest chain's "
        "elapsed warmup + sampling by Stan's clock, split in the ratio of the chains' summed elapsed times"
    )
    if total > 0:
        warmup_share = warmup / total
    else:
        sampler_s, warmup_share = user_s, config.warmup / (config.warmup + config.draws)
        source = (
            f"user and sampler: {interface} sample-call wall (Stan's clock read 0 ms for every chain), "
            "split in the ratio of warmup to sampling iterations"
        )
    return Timings(
        compile_s=compile_s,
        warmup_s=sampler_s * warmup_share,
        sampling_s=sampler_s * (1 - warmup_share),
        user_s=user_s,
        source=source,
        compile_cached=cached,
        detail={
            "chain_warmup_s": [c["warmup"] for c in per_chain],
            "chain_sampling_s": [c["sampling"] for c in per_chain],
        },
    )


def _stan_errors(output: bytes) -> str:
    """Stan's error and warning messages from a chain's logger lines."""
    found = []
    for line in output.splitlines():
        if b'"topic":"logger"' in line:
            level, _, text = json.loads(line)["values"][0].partition(":")
            if level in ("error", "warn") and text.strip():
                found.append(text.strip())
    return " ".join(found) or "no message from Stan"


DRAWS_HEADER = b"stanjax-draws 1\n"  # what the draws writer (runner/engines/draws_writer.hpp) sends first


def sample_table(sent: bytes | bytearray, draws: int) -> tuple[list[str], np.ndarray]:
    """A chain's draws from what its draws writer sent: the column names (``lp__``, ..., then Stan's flat
    constrained names such as ``beta.2.1``) and a (draws, columns) array of the doubles as sent, a view of ``sent``
    (not a copy: slicing the bytes copied a run's draws twice, 10 ms of eight schools' 4 x 50,000)."""
    if not sent.startswith(DRAWS_HEADER):
        raise RuntimeError("Stan sent no draws")
    newline = sent.find(b"\n", len(DRAWS_HEADER))
    if newline < 0:
        raise RuntimeError("Stan sent no column names")
    columns = sent[len(DRAWS_HEADER) : newline].decode().split("\t")
    sent_draws = (len(sent) - newline - 1) / 8 / len(columns)
    if sent_draws != draws:
        raise RuntimeError(f"Stan sent {sent_draws:g} draws, expected {draws}")
    table = np.frombuffer(sent, dtype=np.float64, count=draws * len(columns), offset=newline + 1)
    return columns, table.reshape(draws, len(columns))


def latest_iteration(sent: bytes | bytearray, size: int) -> tuple[int, int, str] | None:
    """The newest "Iteration: i / n (phase)" message in the first ``size`` bytes a chain's logger has sent (it
    sends one every ``refresh`` iterations); None before the first (or while the newest is half received)."""
    at = sent.rfind(b"Iteration:", 0, size)
    found = ITERATION_RE.match(sent, at, size) if at >= 0 else None
    return (int(found[1]), int(found[2]), found[3].decode()) if found else None


def last_tree(sent: bytes | bytearray, size: int) -> tuple[int, int] | None:
    """The newest draw's tree (its depth and leapfrog steps) in the first ``size`` bytes a chain's draws writer has
    sent; None before its first draw."""
    newline = sent.find(b"\n", len(DRAWS_HEADER), size)
    if not sent.startswith(DRAWS_HEADER) or newline < 0:
        return None
    columns = sent[len(DRAWS_HEADER) : newline].decode().split("\t")
    row_bytes = 8 * len(columns)
    rows = (size - newline - 1) // row_bytes
    if not rows:
        return None
    row = np.frombuffer(sent, np.float64, count=len(columns), offset=newline + 1 + (rows - 1) * row_bytes)
    return int(row[columns.index("treedepth__")]), int(row[columns.index("n_leapfrog__")])


def group_columns(columns: list[str], tables) -> dict[str, np.ndarray]:
    """Flat columns of each chain's (draws, columns) table (``theta.1.2``, column-major as Stan writes them) ->
    name -> (chains, draws, *shape); the sampler's ``__`` columns left out, and never copied (7 of the fixed
    mixture target's 8)."""
    spans: dict[str, list[int]] = {}
    for i, column in enumerate(columns):
        if not column.endswith("__"):
            spans.setdefault(column.split(".")[0], []).append(i)
    draws = {}
    for name, indices in spans.items():
        indexes = [tuple(int(part) for part in columns[i].split(".")[1:]) for i in indices]
        shape = tuple(map(max, zip(*indexes)))
        block = np.stack([table[:, indices[0] : indices[-1] + 1] for table in tables])
        draws[name] = block.reshape(*block.shape[:2], *shape, order="F")
    return draws


def _parse_elapsed(stan_output: bytes) -> dict[str, float]:
    """Stan's per-chain warmup and sampling seconds, from its logger lines (searched alone: the regex is slow on
    megabytes of draws)."""
    logger = b"\n".join(line for line in stan_output.splitlines() if b'"topic":"logger"' in line)
    found = {}
    for match in ELAPSED_RE.finditer(logger.decode(errors="replace")):
        found["warmup" if match.group(2) == "Warm-up" else "sampling"] = float(match.group(1))
    if set(found) != {"warmup", "sampling"}:
        raise RuntimeError("Stan output holds no elapsed-time report")
    return found


def _stan_version(header: Path) -> str:
    """The Stan library version a ``stan/version.hpp`` declares."""
    parts = dict(re.findall(r"#define STAN_(MAJOR|MINOR|PATCH) (\d+)", header.read_text()))
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"
