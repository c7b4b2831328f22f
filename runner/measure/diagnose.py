"""Which chains failed, and how, when R-hat says they disagree: a stuck chain (a parameter that never moved), a
collapsed step size, or a chain that sits away from the others; named with the parameters, so that a user needs no
script against the draws to find them. Read by the R-hat gate of a run (:mod:`stanjax.runner.measure.worker`) and by
``stanjax reference`` after each batch (a stuck chain stops it at once: more batches would not free it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A chain's adapted step size below this share of the other chains' median has collapsed (NumPyro's 3.7e-57
# against ~0.3 in posteriordb's arma-arma11 as published): it moves no more than a stuck chain.
STEP_SIZE_COLLAPSED = 1e-6
# A chain sits away from the others on a parameter where its mean lies this many within-chain sds (the chains'
# median sd) from the median of the chain means.
AWAY_SDS = 3.0
SHOWN = 3  # parameters named per chain

ADVICE = (
    "A stuck or distant chain usually started where the posterior is flat or in another mode: give inits in "
    "the region you expect, declare the bounds the model needs (e.g. |theta| < 1 for an invertible MA "
    "term: real<lower=-1, upper=1>), or reparameterise where a funnel traps it (non-centre the group "
    "parameters)."
)


@dataclass(frozen=True)
class Finding:
    """One chain's failure: ``kind`` is "stuck", "collapsed" (its step size) or "away" (from the other chains);
    ``text`` says which chain, how, and on which parameters."""

    kind: str
    text: str

    @property
    def hopeless(self) -> bool:
        """More draws would not help: the chain does not move."""
        return self.kind in ("stuck", "collapsed")

    def __str__(self) -> str:
        return self.text


def _elements(draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every scalar's draws, (chains, draws), by Stan's element name."""
    out = {}
    for name, values in draws.items():
        values = np.asarray(values, dtype=float)
        for index in np.ndindex(values.shape[2:]):
            element = f"{name}[{','.join(str(i + 1) for i in index)}]" if index else name
            out[element] = values[(slice(None), slice(None), *index)]
    return out


def _value(x: float) -> str:
    return f"{x:.3g}"


def chain_findings(draws: dict[str, np.ndarray], step_sizes: list[float] | None = None) -> list[Finding]:
    """One line per chain that failed (numbered from 1, as Stan numbers them): stuck, collapsed step size, or away
    from the others on which parameters; empty when no single chain stands out (then R-hat fails for slow mixing
    shared by all: run longer)."""
    elements = _elements(draws)
    if not elements:
        return []
    stacked = np.stack(list(elements.values()), axis=-1)  # (chains, draws, elements)
    names = list(elements)
    n_chains = stacked.shape[0]
    findings = []
    with np.errstate(invalid="ignore"):
        spread = np.ptp(stacked, axis=1)  # (chains, elements)
        means, sds = stacked.mean(axis=1), stacked.std(axis=1)
    stuck = set()
    for chain in range(n_chains):
        frozen = [i for i in range(len(names)) if spread[chain, i] == 0]
        if frozen and n_chains > 1 and any(spread[c, i] > 0 for c in range(n_chains) for i in frozen):
            stuck.add(chain)
            at = ", ".join(f"{names[i]} = {_value(means[chain, i])}" for i in frozen[:SHOWN])
            findings.append(
                Finding(
                    "stuck",
                    f"chain {chain + 1} is stuck: {len(frozen)} of {len(names)} parameters "
                    f"never moved (sd 0; {at}{', ...' if len(frozen) > SHOWN else ''})",
                )
            )
    sizes = np.asarray(step_sizes or [], dtype=float)
    if sizes.size == n_chains and n_chains > 1:
        for chain in range(n_chains):
            others = np.median(np.delete(sizes, chain))
            if sizes[chain] < STEP_SIZE_COLLAPSED * others:
                findings.append(
                    Finding(
                        "collapsed",
                        f"chain {chain + 1}'s step size collapsed to {sizes[chain]:.2g} "
                        f"(the other chains' median {_value(others)})",
                    )
                )
    if n_chains > 2:
        centre, scale = np.median(means, axis=0), np.median(sds, axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            distance = np.abs(means - centre) / scale  # (chains, elements)
        for chain in sorted(set(range(n_chains)) - stuck):
            away = [
                i
                for i in np.argsort(-np.nan_to_num(distance[chain], nan=-1.0))
                if np.isfinite(distance[chain, i]) and distance[chain, i] > AWAY_SDS
            ]
            if away:
                shown = ", ".join(
                    f"{names[i]} (mean {_value(means[chain, i])} against {_value(centre[i])}, "
                    f"{distance[chain, i]:.1f} sds)"
                    for i in away[:SHOWN]
                )
                findings.append(
                    Finding(
                        "away",
                        f"chain {chain + 1} sits away from the others on {shown}"
                        + (f" and {len(away) - SHOWN} more" if len(away) > SHOWN else ""),
                    )
                )
    return findings
