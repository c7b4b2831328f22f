"""Upgrades of older records to the schema this stanjax writes, one step per version (:data:`MIGRATIONS`, applied
by :func:`stanjax.runner.core.records.migrate` as records are read): each step says what its version added and what an
older record means by its absence.
"""

from __future__ import annotations

# What a bundled Stan run's engine_info says of its diagnostic writer (schema 8): httpstan's, or none.
DIAGNOSTIC_WRITER_HTTPSTAN = "httpstan's: every iteration's values, momenta and gradients formatted as JSON, unread"
DIAGNOSTIC_WRITER_NONE = "none: Stan's no-op writer, as CmdStan without a diagnostic file"
# What a bundled Stan run's engine_info says of its sample writer: stanjax's draws writer; a record without the field
# had httpstan's, which formatted every draw as JSON (names and decimals) for the engine to parse back.
SAMPLE_WRITER_DOUBLES = "stanjax's draws writer: each draw's doubles, buffered, read as they are"


def _v1_to_v2(record: dict) -> dict:
    """Schema 2 names every record's kind and every run's precision and chain method; schema 1 records
    without them were float64 runs with parallel chains (the only kind before the GPU work)."""
    record = {"kind": "run", **record, "schema_version": 2}
    if record["kind"] == "run":
        record = {"precision": "float64", "chain_method": "parallel", **record}
    return record


# The Stan front end of a schema-2 record, from the interface its engine_info names (None where it names none).
_V2_STAN_FRONT_ENDS: dict[str | None, str] = {"httpstan": "bundled", "cmdstanpy": "cmdstan", "pystan": "pystan"}
_V2_JAX_FRONT_ENDS = {"numpyro": "numpyro", "blackjax_nuts": "blackjax", "blackjax_chees": "blackjax"}


def _v2_to_v3(record: dict) -> dict:
    """Schema 3 names every run's front end (schema 2 kept it in engine_info's ``stan_interface``; a failed Stan
    run without one: "unknown"), gives every run a ``study`` ("" for campaigns) and ``sizes`` (schema 2 wrote
    them for completed runs only: None for the others, never re-derived from today's presets), keeps two clocks
    (``user_s``, ``sampler_s``: see ``_v2_clocks``) and drops the per-run cold ESS/s (the report charges each
    repeat its group's uncached compile time instead)."""
    record = {**record, "schema_version": 3}
    if record.get("kind") != "run":
        return record
    info = record.get("engine_info") or {}
    front_end = (
        _V2_STAN_FRONT_ENDS.get(info.get("stan_interface"), "unknown")
        if record["engine"] == "stan"
        else _V2_JAX_FRONT_ENDS.get(record["engine"], record["engine"])
    )
    record = {"study": "", "sizes": None, "front_end": front_end, **record}
    if isinstance(record.get("metrics"), dict):
        record["metrics"] = {k: v for k, v in record["metrics"].items() if k != "ess_per_s_cold"}
    timings = record.get("timings")
    if isinstance(timings, dict) and "run_s" in timings:
        record["timings"] = _v2_clocks(timings, record["engine"])
    return record


def _v2_clocks(timings: dict, engine: str) -> dict:
    """Schema 2's ``run_s`` was the user clock already (Stan: the sample call's wall; JAX: warmup and sampling to
    block_until_ready, the host copy left out). Stan's sampler clock follows from the per-chain elapsed times the
    record kept, as :func:`stanjax.runner.engines.stan_output._stan_split` computes it now; a JAX run's warmup and
    sampling were its sampler clock already. The recorded ms per gradient keeps its meaning (see
    ``runner.measure.metrics``)."""
    timings = {k: v for k, v in timings.items() if k != "run_s"} | {"user_s": timings["run_s"]}
    detail = timings.get("detail") or {}
    if engine == "stan" and detail.get("chain_warmup_s"):
        warmup, sampling = detail["chain_warmup_s"], detail["chain_sampling_s"]
        sampler_s = max(w + s for w, s in zip(warmup, sampling))
        share = sum(warmup) / (sum(warmup) + sum(sampling))
        timings |= {"warmup_s": sampler_s * share, "sampling_s": sampler_s * (1 - share)}
    return timings | {"sampler_s": timings["warmup_s"] + timings["sampling_s"]}


def _v3_to_v4(record: dict) -> dict:
    """Schema 4 says what each run was given: ``cores`` (the worker's pinned cores; None before runs were pinned)
    and Stan's ``threads_per_chain`` (1 for every earlier run: there were no threaded programs)."""
    if record.get("kind") != "run":
        return {**record, "schema_version": 4}
    return {**record, "schema_version": 4, "threads_per_chain": 1, "cores": None}


def _v4_to_v5(record: dict) -> dict:
    """Schema 5 keeps each parameter's posterior sd and the MCSE of that sd (the reference gate checks the spread
    as well as the mean); earlier runs did not record them: empty."""
    if record.get("kind") != "run" or not record.get("metrics"):
        return {**record, "schema_version": 5}
    return {
        **record,
        "schema_version": 5,
        "metrics": {**record["metrics"], "posterior_sd": {}, "posterior_mcse_sd": {}},
    }


def _v5_to_v6(record: dict) -> dict:
    """Schema 6 records the superchains a run's chains started in and its nested R-hat (many-chain runs are judged
    by it, Margossian et al. 2024); every earlier run started each chain apart: no superchains, no nested R-hat."""
    if record.get("kind") != "run" or not record.get("metrics"):
        return {**record, "schema_version": 6}
    return {**record, "schema_version": 6, "metrics": {**record["metrics"], "superchains": 0, "max_rhat_nested": None}}


def _v6_to_v7(record: dict) -> dict:
    """Schema 7 tells the bundled Stan's builds apart. Until 2026-11-28 (commit 122031c) every program was built
    as httpstan builds it (STAN_THREADS, the autodiff stack reached through ``__tls_get_addr``) and the chains'
    reader woke for every message, taking CPU from the chains: such a run (its engine_info without
    ``stan_threads``) is front end "httpstan" (label "httpstan-CPU"), never pooled with the bundled Stan as built
    since (``runner/engines/stan_build.py``)."""
    record = {**record, "schema_version": 7}
    info = record.get("engine_info") or {}
    if record.get("kind") == "run" and (record.get("engine"), record.get("front_end")) == ("stan", "bundled"):
        if "stan_threads" not in info:
            record["front_end"] = "httpstan"
    return record


def _v7_to_v8(record: dict) -> dict:
    """Schema 8 says which diagnostic writer the bundled Stan's chains fed. Before it, httpstan's services object
    formatted every iteration's unconstrained values, momenta and gradients as JSON for a writer nothing read;
    since, Stan's no-op writer takes them (``stan_build.NO_OP_WRITER``). A bundled or httpstan run without the field
    fed httpstan's writer; the label stays (the cost shows only where a gradient takes microseconds), the record
    says it."""
    record = {**record, "schema_version": 8}
    info = record.get("engine_info")
    if record.get("kind") == "run" and record.get("front_end") in ("bundled", "httpstan") and info:
        if "diagnostic_writer" not in info:  # (a run that failed before Stan reported itself has no info to add to)
            record["engine_info"] = {**info, "diagnostic_writer": DIAGNOSTIC_WRITER_HTTPSTAN}
    return record


# Upgrades, one step each: a record of version v goes through MIGRATIONS[v], MIGRATIONS[v + 1], ... Files are
# never rewritten (history is append-only); records are upgraded as they are read.
MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6, 6: _v6_to_v7, 7: _v7_to_v8}
