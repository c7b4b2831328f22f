"""The runs table: one row per record (identity, engine setup and the resources it had, sizes, status, timings,
metrics and energy, its block and whether an answer may use it) with what the report derives from them, and its
summary per measurement; failed runs grouped for the report. ``runs.csv.gz`` is this table (less its GPU names); every section of the report reads it."""

from __future__ import annotations

import pandas as pd

from stanjax import models
from stanjax.reports import headline
from stanjax.runner.core import records, run_measures, superseded
from stanjax.runner.core.engine_registry import ENGINES, family
from stanjax.runner.core.records import RunRecord

# A record's measurement key (its group of repeats) as the columns of the runs table.
KEYS = records.MEASUREMENT_FIELDS
TARGET_ESS = 1000  # the effective draws "time to result" counts to
SCALAR_TIMINGS = [f for f in run_measures.RunTimings.__struct_fields__ if f not in ("source", "detail")]
SCALAR_METRICS = [f for f in run_measures.RunMetrics.__struct_fields__ if not f.startswith("posterior_")]


def tidy(all_records: list[RunRecord], entries: tuple[superseded.Entry, ...] | None = None) -> pd.DataFrame:
    """One row per record: identity, engine setup and the resources it had, sizes, status, timings and metrics,
    its block, whether an answer may use it (``entries``: results/SUPERSEDED's unless given); and what the report
    derives from them (cold ESS/s, gradients per second, the share of the run spent sampling)."""
    registry = models.registry()
    entries = superseded.load() if entries is None else entries
    rows = []
    for r in all_records:
        metrics, timings, sizes = r.metrics, r.timings, r.sizes or {}
        spec = registry.get(r.model_id)
        n_key = spec.n_key if spec else None  # which size entry is N: a fact of the model; its value: the record's
        # (a failed run may have recorded no sizes: its N is then the one it was resized to, if any)
        n_rows = sizes.get(n_key, dict(r.config.resize).get(n_key)) if n_key else None
        rows.append(
            {
                **r.measurement_key()._asdict(),
                "gpus": r.provenance.machine.gpu,  # for the roofline; left out of runs.csv.gz
                "engine": r.engine,
                "family": family(r.engine) or "",
                "front_end": r.front_end,
                "retired": r.engine in ENGINES and r.front_end in ENGINES[r.engine].retired,
                "approximate": r.engine in ENGINES and ENGINES[r.engine].approximate,
                "device": r.device,
                "precision": r.precision,
                "chain_method": r.chain_method,
                "matmul_precision": r.engine_info.get("matmul_precision"),
                "threads_per_chain": r.threads_per_chain,
                "program": r.program,
                "cpu_threads": r.engine_info.get("cpu_threads"),
                "cores_usable": r.provenance.machine.cores_usable,
                "machine_cores": r.provenance.machine.cores,
                "repeat": r.repeat,
                "pairing": r.block_of[0],
                "block": r.block_of[1],
                "chains": r.config.chains,
                "warmup": r.config.warmup,
                "draws": r.config.draws,
                "n_rows": n_rows,
                "features": sizes.get("D"),
                "sizes_text": ", ".join(f"{name} = {value:,}" for name, value in sorted(sizes.items())),
                "resized": ", ".join(f"{name} = {value:,}" for name, value in r.config.resize),
                "campaign_id": r.campaign_id,
                "status": r.status,
                "loaded": bool(r.load and r.load.loaded),
                "left_out": superseded.left_out(r, entries),
                "superseded": superseded.reason(r, entries) or "",
                "other_processes_cores": r.load.other_processes_cores if r.load else None,
                "valid": r.valid,
                "failed_gates": ", ".join(r.failed_gates),
                "reference_max_z": r.gates.get("reference", {}).get("max_z"),
                "reference_max_z_sd": r.gates.get("reference", {}).get("max_z_sd"),
                "created": r.created,
                # Every scalar timing and metric the record type declares: a new one reaches runs.csv.gz by itself.
                **{name: getattr(timings, name) if timings else None for name in SCALAR_TIMINGS},
                **{name: getattr(metrics, name) if metrics else None for name in SCALAR_METRICS},
                **energy_columns(r.energy, r.device),
                "error": r.error,
                "run_id": r.run_id,
                "wall_s": r.wall_s,
            }
        )
    runs = pd.DataFrame(rows)
    runs["ess_per_s_cold"] = headline.cold_ess_per_s(runs)
    # What a user waits for, beside ESS/s: a fresh process to TARGET_ESS effective draws, compilation included.
    # The process's start, imports, data and compilation (from the cache, as this run found it) and its warmup are
    # paid once; the rest of the sample call grows with the draws needed, at this run's ESS per draw. Cold: the
    # compilation its group paid uncached in place of this run's.
    fixed = runs.wall_s - runs.user_s + runs.warmup_s
    runs["time_to_result_s"] = fixed + (runs.user_s - runs.warmup_s) * TARGET_ESS / runs.min_ess_bulk
    runs["time_to_result_cold_s"] = runs.time_to_result_s + headline.cold_compile_s(runs) - runs.compile_s
    # ESS/s = ESS per gradient × gradients per second while sampling × share of the run spent sampling
    runs["gradients_per_s"] = 1000 / runs.ms_per_gradient
    runs["sampling_share"] = runs.sampling_s / runs.sampler_s
    runs["ess_per_joule"] = runs.min_ess_bulk / runs.joules.astype(float)
    return runs


def energy_columns(energy: run_measures.RunEnergy | None, device: str) -> dict:
    """A run's joules summed over the sources that measured them and that it used (a GPU run: the GPUs and CPU
    packages; a CPU run: the CPU packages, not an idle GPU beside it) and their names; None where none did (or a
    counter had not ticked), so its ESS per joule is "not measured", never a cost of 0 J. Peak memory: the
    worker's host memory, and the largest of its GPUs'."""
    sources = energy.sources if energy else {}
    joules = {
        name: s.joules
        for name, s in sources.items()
        if s.joules is not None and (device == "gpu" or name.startswith("cpu"))
    }
    gpu_memory = [s.peak_memory_mib for s in sources.values() if s.peak_memory_mib is not None]
    total = sum(joules.values())
    return {
        "joules": total if total > 0 else None,
        "energy_sources": " + ".join(joules),
        "peak_host_memory_mib": energy.peak_host_memory_mib if energy else None,
        "peak_gpu_memory_mib": max(gpu_memory) if gpu_memory else None,
    }


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Median over the valid repeats per measurement (``KEYS``), and the invalid count."""
    keys = [*KEYS, "resized"]  # resized: shown beside the size (it follows from the config)
    ok = runs[runs.valid]
    summary = (
        ok.groupby(keys, sort=True)
        .agg(
            repeats=("repeat", "count"),
            ess_per_s=("ess_per_s", "median"),
            ess_per_s_cold=("ess_per_s_cold", "median"),
            ess_per_joule=("ess_per_joule", "median"),
            ms_per_gradient=("ms_per_gradient", "median"),
            compile_s=("compile_s", "max"),
            compile_always_cached=("compile_cached", "all"),
            user_s=("user_s", "median"),
            sampler_s=("sampler_s", "median"),
            min_ess_bulk=("min_ess_bulk", "median"),
            max_rhat=("max_rhat", "max"),
            divergences=("divergences", "sum"),
        )
        .reset_index()
    )
    invalid = runs[~runs.valid].groupby(keys).size().rename("invalid").reset_index()
    summary = summary.merge(invalid, on=keys, how="outer").sort_values(keys, ignore_index=True)
    summary["invalid"] = summary.invalid.fillna(0).astype(int)
    summary["repeats"] = summary.repeats.fillna(0).astype(int)
    return summary


def failed_groups(failed: pd.DataFrame, error_lines: int = 3) -> list[dict]:
    """Failed runs, a row per machine, model, engine setup and status: how many failed and in which repeats, the
    first one's error (its last ``error_lines``: the exception and where it was raised; runs.csv.gz has it whole), and
    the other runs' last lines where they differ (a failure repeated in every block is one row, not one per block)."""

    def last_line(error: str) -> str:
        return (error.strip().splitlines() or [""])[-1]

    rows = []
    for (machine, model_id, label, status), group in failed.groupby(
        ["machine", "model_id", "label", "status"], sort=True
    ):
        errors = [str(error) for error in group.sort_values("repeat").error]
        rows.append(
            {
                "machine": machine,
                "model_id": model_id,
                "label": label,
                "status": status,
                "repeats": sorted(int(r) + 1 for r in group.repeat),
                "error": "\n".join(errors[0].strip().splitlines()[-error_lines:]),
                "other_errors": sorted({last_line(e) for e in errors[1:]} - {last_line(errors[0])}),
            }
        )
    return rows
