"""A closed campaign's runs packed to be committed (``stanjax history --close``): per-parameter summaries are 99 %
of a record's bytes where a model has thousands of parameters, so they move to a sidecar of float64 columns
(``parameters.npz``) beside the gzipped records, and come back, byte for byte, as the records are read
(:mod:`stanjax.runner.core.records` reads ``results.jsonl.gz`` through ``expand``)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

PARAMETERS_FILE = "parameters.npz"
SUMMARIES = ("posterior_mean", "posterior_sd", "posterior_mcse", "posterior_mcse_sd", "posterior_khat")


def canonical(record: dict) -> str:
    """A record's line as ``append`` writes it."""
    return json.dumps(record, sort_keys=True, allow_nan=True)


def close(plain: Path) -> dict:
    """Pack a closed campaign's runs file: each run's per-parameter summaries (``SUMMARIES``) move to
    ``PARAMETERS_FILE`` beside it as columns (the line, the name, the float64 value's bytes), the records without
    them to ``<plain>.gz``; the plain file goes only once ``expand`` gives its bytes back exactly (its sha256 is
    kept in the sidecar). A line not as ``append`` writes it, or a summary with a value that is not a float,
    stays whole in the gzipped file. Returns the sizes before and after."""
    original = plain.read_bytes()
    names: dict[str, int] = {}
    columns: dict[str, tuple[list[int], list[int], list[float]]] = {summary: ([], [], []) for summary in SUMMARIES}
    lines = []
    for number, line in enumerate(original.decode("utf-8").split("\n")):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        metrics = record.get("metrics") if isinstance(record, dict) else None
        if not isinstance(metrics, dict) or canonical(record) != line:
            lines.append(line)
            continue
        for summary in SUMMARIES:
            values = metrics.get(summary)
            if isinstance(values, dict) and values and all(type(v) is float for v in values.values()):
                at, name, value = columns[summary]
                for key, v in values.items():
                    at.append(number)
                    name.append(names.setdefault(key, len(names)))
                    value.append(v)
                metrics[summary] = {}
        lines.append(canonical(record))
    arrays = {"names": np.array(list(names), dtype=str), "sha256": np.array(hashlib.sha256(original).hexdigest())}
    for summary, (at, name, value) in columns.items():
        arrays |= {f"{summary}-line": np.array(at, np.int32), f"{summary}-name": np.array(name, np.int32)}
        # the values' bytes by significance (Parquet's BYTE_STREAM_SPLIT): exponents together deflate 12 % smaller
        arrays[f"{summary}-value"] = np.ascontiguousarray(np.array(value, "<f8").view(np.uint8).reshape(-1, 8).T)
    packed = plain.with_name(plain.name + ".gz")
    sidecar = plain.with_name(PARAMETERS_FILE)
    write_sidecar(sidecar, arrays)
    packed.write_bytes(gzip.compress("\n".join(lines).encode("utf-8"), compresslevel=9, mtime=0))
    if expand(packed) != original:
        packed.unlink()
        sidecar.unlink()
        raise RuntimeError(f"{plain}: its packed form does not give it back; left as it was")
    plain.unlink()
    return {"before": len(original), "after": packed.stat().st_size + sidecar.stat().st_size}


def write_sidecar(sidecar: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez``'s layout (one ``.npy`` member an array, which ``np.load`` reads) compressed with LZMA, not
    deflate (the committed sidecars: 19.6 MB -> 18.8), dated 1980 so that the same arrays give the same bytes."""
    with zipfile.ZipFile(sidecar, "w") as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, array, allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            archive.writestr(info, member.getvalue(), compress_type=zipfile.ZIP_LZMA)


def up_to_date(sidecar: Path) -> bool:
    """Whether a sidecar is packed as ``close`` packs it now (LZMA; earlier ones: deflate)."""
    with zipfile.ZipFile(sidecar) as archive:
        return all(info.compress_type == zipfile.ZIP_LZMA for info in archive.infolist())


def expand(packed: Path) -> bytes:
    """A packed runs file's bytes as they were before ``close``: its lines with their summaries back from the
    sidecar beside it (where there is one: a sidecar set aside reads as empty summaries)."""
    data = gzip.decompress(packed.read_bytes())
    sidecar = packed.with_name(PARAMETERS_FILE)
    if not sidecar.exists():
        return data
    with np.load(sidecar) as arrays:
        names = arrays["names"].tolist()
        by_line: dict[int, dict[str, dict]] = {}
        for summary in SUMMARIES:
            at, name = arrays[f"{summary}-line"].tolist(), arrays[f"{summary}-name"].tolist()
            values = np.ascontiguousarray(arrays[f"{summary}-value"].T).view("<f8").ravel().tolist()
            for line, key, value in zip(at, name, values, strict=True):
                by_line.setdefault(line, {}).setdefault(summary, {})[names[key]] = value
    lines = data.decode("utf-8").split("\n")
    for number, summaries in by_line.items():
        record = json.loads(lines[number])
        record["metrics"] |= summaries
        lines[number] = canonical(record)
    return "\n".join(lines).encode("utf-8")
