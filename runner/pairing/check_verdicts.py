"""The verdicts of ``stanjax check`` and their exit codes (the density stage and the short run of
:mod:`stanjax.runner.pairing.check` each end in one), and the short run's verdict: the gates its runs failed, each with the
advice a Stan user would expect, the two engines disagreeing, or (with ``--reference``) both engines away from the
reference posterior.
"""

from __future__ import annotations

from stanjax.runner.measure import diagnose, validity

# The three verdicts and their exit codes (2 stays a problem with the input, found before anything runs).
SAME, DIFFERENT, SAMPLING_FAILED = "same posterior", "different posterior", "sampling failed"
EXIT = {SAME: 0, DIFFERENT: 1, SAMPLING_FAILED: 3}
# What a Stan user would be told for each failed gate (the gates of :mod:`stanjax.runner.measure.validity`).
ADVICE = {
    "divergences": "divergent transitions: the sampler cannot follow the posterior's curvature somewhere; raise "
    "adapt_delta (NumPyro: target_accept_prob), or reparameterise where it curves sharply",
    "rhat": "R-hat above 1.01: the chains disagree; run longer (--warmup, --draws)",
    "ess": "ESS below 100 a chain: run longer (--draws), or reparameterise where draws are strongly correlated",
    "finite": "non-finite draws: a parameter overflowed; check its constraint and its prior",
    "completed": "a run did not finish: its log says why",
    "reference": "a run's means or sds differ from the model's reference posterior",
}
ENGINE_NAMES = {"stan": "Stan", "numpyro": "NumPyro", "nutpie_stan": "nutpie-Stan", "nutpie_jax": "nutpie-JAX"}
DISAGREE = (
    "both engines' runs pass their gates, yet their means or sds differ by more than 5 combined MCSEs: "
    "run longer; if the gap stays, the two posteriors differ where the density check's points did not "
    "look (raise --points)"
)


# The divergences' advice where their draws show a funnel (``agreement.funnel``): {name} the positive parameter whose
# small values they crowd, {divergent} and {overall} its medians in the divergent draws and in all.
FUNNEL = (
    "divergent transitions where {name} is small (median {divergent:.3g} in the divergent draws, {overall:.3g} in "
    "all): a funnel's signature; non-centre the parameters {name} scales (Stan: offset/multiplier or a "
    "standard-normal raw parameter; NumPyro: LocScaleReparam or the same raw site)"
)


def run_verdict(
    records: list,
    pairs: list[dict],
    reference: dict | None = None,
    pooled: dict[str, float] | None = None,
    seen: dict[str, str] | None = None,
) -> tuple[str, list[str]]:
    """SAME where every run passed its gates and the engines agree; else SAMPLING_FAILED (the density check agreed
    before the runs), with advice per failed gate naming the engines that failed it. With a reference (``--reference``'s,
    or the model's own): DIFFERENT where the runs pass, the engines agree with each other and a run does not agree
    with the reference: the posterior the two share is not the reference's. ``pooled``: per engine whose runs
    failed R-hat alone, the R-hat of its runs' chains pooled (``pooling``), which judges the R-hat gate for it;
    ``seen``: a failed gate's advice from what its draws show (a funnel's signature), in place of the general one."""
    failed: dict[str, set[str]] = {}
    chains = []  # which chains failed R-hat, and how (runner.measure.diagnose), per run
    passed_pooled = {engine for engine, value in (pooled or {}).items() if value <= validity.RHAT_MAX}
    for r in records:
        if r.engine in passed_pooled:  # its one failed gate, R-hat, passes on the pooled draws
            continue
        for gate in r.failed_gates or (["completed"] if r.status != "ok" else []):
            if not (gate == "reference" and reference is not None):  # judged below, with the engines' agreement
                failed.setdefault(gate, set()).add(ENGINE_NAMES[r.engine])
        chains += [
            f"{ENGINE_NAMES[r.engine]} run {r.repeat + 1}: {line}"
            for line in (r.gates.get("rhat") or {}).get("chains", [])
        ]
    if failed:
        return SAMPLING_FAILED, [
            f"{' and '.join(sorted(engines))}: {(seen or {}).get(gate) or ADVICE.get(gate, gate)}"
            for gate, engines in failed.items()
        ] + chains + ([diagnose.ADVICE] if chains else [])
    if not pairs or not all(p["passed"] for p in pairs):
        return SAMPLING_FAILED, [DISAGREE]
    if reference is not None:
        gates = [
            (ENGINE_NAMES[r.engine], validity.reference_gate(r.metrics, reference, reference["source"]))
            for r in records
        ]
        off = [(engine, gate) for engine, gate in gates if not gate["passed"]]
        if off:
            engine, worst = max(off, key=lambda item: item[1]["max_z"])
            return DIFFERENT, [
                f"the engines agree with each other, not with the reference ({reference['source']}): "
                f"{engine}'s mean of {worst['worst_parameter']} is {worst['max_z']:.2g} combined "
                f"MCSEs from it (limit {validity.K_REFERENCE:g}): a different model or data"
            ]
    return SAME, []


POOLED_MIN_RUNS = 2  # an engine's runs whose chains R-hat may judge together


def pooling(records: list) -> list[str]:
    """The engines of the pair whose runs all completed, at least ``POOLED_MIN_RUNS`` of them, and failed no gate
    but R-hat, some that one: a large model's max R-hat over many parameters passes 1.01 by chance in one run of
    four chains; the runs' chains together decide (``pooled`` of ``run_verdict``)."""
    engines = []
    for engine in ("stan", "numpyro"):
        mine = [r for r in records if r.engine == engine]
        gates = [set(r.failed_gates) for r in mine]
        if (
            len(mine) >= POOLED_MIN_RUNS
            and all(r.status == "ok" for r in mine)
            and all(failed <= {"rhat"} for failed in gates)
            and any(gates)
        ):
            engines.append(engine)
    return engines


def pooled_notes(records: list, pooled: dict[str, float]) -> list[str]:
    """A line per engine whose R-hat gate was judged on its runs pooled: each run's max R-hat, the pooled one."""
    lines = []
    for engine, value in pooled.items():
        mine = [r for r in records if r.engine == engine]
        each = ", ".join(f"{r.metrics.max_rhat:.3f}" for r in mine)
        verdict = "passes" if value <= validity.RHAT_MAX else "fails"
        lines.append(
            f"{ENGINE_NAMES[engine]}: max R-hat {each} in its {len(mine)} runs of {mine[0].config.chains} chains, "
            f"{value:.3f} over their {sum(r.config.chains for r in mine)} chains pooled: the R-hat gate {verdict} "
            f"on the pooled draws (limit {validity.RHAT_MAX}; more chains, less noise in R-hat itself)"
        )
    return lines


def nutpie_notes(records: list) -> list[str]:
    """A line per nutpie engine whose runs failed a gate: beside the pair, not in its verdict (the verdict is
    whether Stan and NumPyro sample one posterior), its ESS/s left out of the speed split."""
    notes = []
    for engine in ("nutpie_stan", "nutpie_jax"):
        mine = [r for r in records if r.engine == engine]
        failed = sorted({gate for r in mine for gate in r.failed_gates or (["completed"] if r.status != "ok" else [])})
        if failed:
            runs = sum(1 for r in mine if not r.valid)
            notes.append(
                f"{ENGINE_NAMES[engine]} (beside the pair, not in the verdict): {runs} of {len(mine)} runs failed "
                f"{', '.join(failed)}; {'; '.join(ADVICE.get(gate, gate) for gate in failed)}"
            )
    return notes
