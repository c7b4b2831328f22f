"""Records: durable appends, a torn last line skipped, anything else malformed refused, provenance complete."""

import gzip
import json
import subprocess
import sys
import warnings

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stanjax.models import ROOT
from stanjax.runner.core import environment, migrations, packing, records, run_measures

FIXTURE = ROOT / "tests" / "fixtures" / "tiny_repeats2.jsonl"


def measurement(i):
    return {"schema_version": records.SCHEMA_VERSION, "kind": "measurement", "i": i}


def test_append_then_read_round_trips(tmp_path):
    path = tmp_path / "r" / "results.jsonl"
    for i in range(3):
        records.append(path, measurement(i))
    assert [r["i"] for r in records.read_measurements(path)] == [0, 1, 2]
    assert [r["i"] for r in records.read_measurements(tmp_path)] == [0, 1, 2]  # a folder: every *.jsonl below


def test_a_run_record_round_trips_typed(tmp_path):
    [run] = records.read(FIXTURE)[:1]
    path = tmp_path / "results.jsonl"
    records.append(path, run)
    [back] = records.read(path)
    assert back == run and isinstance(back.metrics, run_measures.RunMetrics) and back.config.chains == run.config.chains


def test_an_append_after_a_torn_last_line_starts_a_line_of_its_own(tmp_path):
    path = tmp_path / "results.jsonl"
    records.append(path, measurement(0))
    with open(path, "a") as handle:
        handle.write('{"schema_version": 3, "kind": "measurement", "i": ')  # a run died mid-append
    records.append(path, measurement(2))
    with pytest.warns(UserWarning, match=r"unreadable line\(s\) \[2\]"):
        assert [r["i"] for r in records.read_measurements(path)] == [0, 2]


@pytest.mark.parametrize("torn", [False, True])
@pytest.mark.parametrize("fault", ["half written", "fsync"])
def test_an_append_that_fails_leaves_the_file_byte_for_byte_as_it_was(fault, torn, tmp_path, monkeypatch):
    """A disk that fills mid-append (half the line written, then ENOSPC; or every byte written and fsync failing)
    leaves no half record behind, the newline a torn last line would have got included; the error still raises."""
    import errno
    import os

    path = tmp_path / "results.jsonl"
    records.append(path, measurement(0))
    if torn:
        with open(path, "a") as handle:
            handle.write('{"schema_version": 3, "i": ')
    before = path.read_bytes()
    real_write, real_fsync = os.write, os.fsync

    def full(fd, data):
        if fault == "half written":
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    def fsync(fd):
        if fault == "fsync":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(records.os, "write", full)
    monkeypatch.setattr(records.os, "fsync", fsync)
    with pytest.raises(OSError, match="No space left on device"):
        records.append(path, measurement(1))
    monkeypatch.undo()
    assert path.read_bytes() == before
    records.append(path, measurement(2))  # space freed: the next record follows the earlier ones as if none failed
    assert path.read_bytes().startswith(before)


def test_torn_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "results.jsonl"
    records.append(path, measurement(0))
    with open(path, "a") as handle:
        handle.write('{"schema_version": 1, "i": ')
    with pytest.warns(UserWarning, match="torn last line"):
        assert [r["i"] for r in records.read_measurements(path)] == [0]


def test_corrupt_line_in_the_middle_is_skipped_and_the_rest_kept(tmp_path):
    path = tmp_path / "results.jsonl"
    good = json.dumps(measurement(1)) + "\n"
    path.write_text(good + "not json\n" + good)
    with pytest.warns(UserWarning, match=r"unreadable line\(s\) \[2\]"):
        assert len(records.read_measurements(path)) == 2


def test_a_run_record_missing_fields_is_skipped_with_a_warning_naming_file_and_line(tmp_path):
    path = tmp_path / "results.jsonl"
    good = json.dumps(records.to_builtins(records.read(FIXTURE)[0])) + "\n"
    path.write_text(good + json.dumps({"schema_version": records.SCHEMA_VERSION, "kind": "run"}) + "\n")
    with pytest.warns(UserWarning, match=r"results.jsonl: skipped line 2, not a run record: Object missing required"):
        assert len(records.read(path)) == 1


@pytest.mark.parametrize("content", [b"\x00\xff garbage\n[1, 2]\n", b'{"schema_version": 3, "kind": "ru'])
def test_a_file_of_garbage_or_one_torn_line_is_skipped_not_refused(tmp_path, content):
    """Damage never blocks the rest: resume, report and nightly read the other files (and this one's nothing)."""
    path = tmp_path / "results.jsonl"
    path.write_bytes(content)
    good = tmp_path / "other" / "results.jsonl"
    records.append(good, records.read(FIXTURE)[0])
    with pytest.warns(UserWarning, match="skipped"):
        assert records.read(path) == [] and len(records.read(tmp_path)) == 1


@pytest.mark.parametrize(
    "content, why",
    [
        (b'{"schema_version": 3, "kind": "ru', "unreadable line(s) [1]"),  # nothing before it: not torn
        (b'\n\n{"schema_version": 3, "kind": "ru', "unreadable line(s) [3]"),
        (json.dumps(measurement(0)).encode() + b'\n{"schema_version": 3, "kind": "ru', "a torn last line"),
        (
            json.dumps(measurement(0)).encode() + b"\nnot json\n" + json.dumps(measurement(1)).encode(),
            "unreadable line(s) [2]",
        ),
    ],
)
def test_a_torn_last_line_is_said_only_after_lines_that_were_read(tmp_path, content, why):
    """A file of one unreadable line is no run that died mid-append after others: it is named by its line."""
    path = tmp_path / "results.jsonl"
    path.write_bytes(content)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read_all warns nothing: its caller says what was skipped
        _, _, [skipped] = records.read_all(path)
    assert (skipped.file, skipped.count, skipped.why) == (path, 1, why)
    with pytest.warns(records.SkippedLines) as said:
        records.read(path)
    assert [str(w.message) for w in said] == [f"{path}: skipped {why}"]


def test_skipped_lines_count_every_kind_of_damage(tmp_path):
    path = tmp_path / "results.jsonl"
    records.append(path, records.read(FIXTURE)[0])
    future = {"schema_version": records.SCHEMA_VERSION + 1, "kind": "run"}
    lines = [
        "not json",
        json.dumps({"schema_version": records.SCHEMA_VERSION, "kind": "run"}),
        *[json.dumps(future)] * 2,
    ]
    with open(path, "a") as handle:
        handle.write("".join(line + "\n" for line in lines))
    runs, _, [skipped] = records.read_all(path)
    assert len(runs) == 1 and skipped.count == 4
    assert skipped.why.startswith("unreadable line(s) [2]; line 3, not a run record") and "(lines [4, 5]" in skipped.why


def test_future_schema_records_among_good_ones_are_skipped_with_one_warning_saying_why(tmp_path):
    path = tmp_path / "results.jsonl"
    records.append(path, records.read(FIXTURE)[0])
    for _ in range(2):
        records.append(path, {"schema_version": records.SCHEMA_VERSION + 1, "kind": "run"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(records.read(path)) == 1
    [warning] = caught
    assert f"2 record(s) of schema_version {records.SCHEMA_VERSION + 1} (lines [2, 3]" in str(warning.message)


def test_future_schema_is_refused(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"schema_version": records.SCHEMA_VERSION + 1}) + "\n")
    with pytest.raises(
        records.RecordsError,
        match=rf"results.jsonl: nothing but 1 record\(s\) of schema_version {records.SCHEMA_VERSION + 1} \(lines \[1\]",
    ):
        records.read(path)


RECORD = {"schema_version": records.SCHEMA_VERSION, "kind": "measurement", "model_id": "m", "note": 'ü <x> \\ "q"'}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 6),
    cut=st.integers(0, 10_000),
    damage=st.lists(st.tuples(st.integers(0, 10_000), st.binary(min_size=1, max_size=3)), max_size=3),
)
def test_reader_keeps_every_intact_record_whatever_the_damage(tmp_path, n, cut, damage):
    """Truncate anywhere and overwrite random bytes: read() returns every intact line's record (a damaged
    schema_version may read as another schema, refused if nothing else is left) and never raises anything else."""
    lines = [(json.dumps({**RECORD, "i": i}) + "\n").encode() for i in range(n)]
    blob = bytearray(b"".join(lines))
    for position, junk in damage:
        position %= len(blob)
        blob[position : position + len(junk)] = junk
    blob = bytes(blob[: cut % (len(blob) + 1)])
    path = tmp_path / "results.jsonl"
    path.write_bytes(blob)
    intact = [i for i, line in enumerate(lines) if line in blob.split(b"\n") or line.rstrip(b"\n") in blob.split(b"\n")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = [r.get("i") for r in records.read_measurements(path)]  # damage can rename a key, stay JSON
        except records.RecordsError:
            assert not intact
            return
    assert set(intact) <= set(got)


def test_provenance_names_machine_versions_and_commit():
    prov = environment.provenance()
    assert prov.machine.cores >= 1 and prov.machine.cpu
    assert 1 <= prov.machine.cores_usable <= prov.machine.cores
    assert {"jax", "numpyro", "pystan", "httpstan", "arviz", "python"} <= set(prov.versions)
    assert prov.versions["numpyro"] is not None
    assert prov.command


@pytest.mark.parametrize("user_setting", [None, "glibc.malloc.arena_max=2"])
def test_workers_get_fixed_malloc_thresholds_unless_the_user_set_their_own(user_setting, monkeypatch):
    if user_setting is None:
        monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    else:
        monkeypatch.setenv("GLIBC_TUNABLES", user_setting)
    expected = user_setting or environment.MALLOC_TUNABLES
    assert environment.worker_env()["GLIBC_TUNABLES"] == expected
    environment.provenance.cache_clear()
    try:
        assert environment.provenance().glibc_tunables == expected
    finally:
        environment.provenance.cache_clear()
    shown = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ['GLIBC_TUNABLES'])"],
        env=environment.worker_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.strip() == expected


def test_machine_slug_names_the_gpu_or_cpu_and_the_cores():
    h100 = environment.Machine(
        cpu="AMD EPYC 7B13 64-Core Processor", cores=16, gpu=["NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB"]
    )
    assert h100.slug == "h100-80gb-hbm3-16core"
    assert environment.Machine(cpu="Intel(R) Xeon(R) Processor", cores=2).slug == "xeon-2core"
    assert environment.Machine(cpu="", cores=4).slug == "cpu-4core"


XEON_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: {model}
model name\t: Intel(R) Xeon(R) Processor
stepping\t: {stepping}
microcode\t: 0xffffffff
flags\t\t: fpu sse4_2 avx avx2 fma {extra}

processor\t: 1
model name\t: something else
"""


def test_two_cpus_of_one_slug_have_their_own_fingerprints():
    """The committed "xeon-2core" records came from a Xeon with AVX-512 and one without: one slug (the folder
    name), two fingerprints; the identity is the first processor's, its vector extensions named."""
    machines = {}
    for name, (model, stepping, extra) in {"skylake": (85, 4, "avx512f avx512bw"), "older": (79, 1, "")}.items():
        cpu, cpu_id = environment.cpu_identity(XEON_CPUINFO.format(model=model, stepping=stepping, extra=extra))
        machines[name] = environment.Machine(cpu=cpu, cores=2, cpu_id=cpu_id)
    assert {m.slug for m in machines.values()} == {"xeon-2core"}
    assert machines["skylake"].fingerprint != machines["older"].fingerprint
    assert machines["skylake"].cpu_id["vector"] == "sse4_2 avx avx2 fma avx512f avx512bw"
    assert machines["older"].cpu_id == {
        "family": "6",
        "model": "79",
        "stepping": "1",
        "microcode": "0xffffffff",
        "vector": "sse4_2 avx avx2 fma",
        "flags_sha": machines["older"].cpu_id["flags_sha"],
    }
    older_record = environment.Machine(cpu="Intel(R) Xeon(R) Processor", cores=2)  # made before fingerprints
    assert older_record.fingerprint == "" and older_record.label == "xeon-2core"
    assert machines["skylake"].label == f"xeon-2core-{machines['skylake'].fingerprint}"
    # A record is of this machine by label, or by slug where it predates fingerprints (--resume, GPU steps).
    assert not environment.same_machine(machines["older"], machines["skylake"])
    assert environment.same_machine(older_record, machines["skylake"])
    assert environment.same_machine(machines["skylake"], machines["skylake"])
    assert len(environment.machine().fingerprint) == 8  # this machine's, read from /proc/cpuinfo


def test_schema_1_records_are_upgraded_on_read_and_the_file_is_left_alone(tmp_path):
    path = tmp_path / "results.jsonl"
    run = {
        "schema_version": 1,
        "model_id": "m",
        "device": "cpu",
        "engine": "stan",
        "engine_info": {"stan_interface": "pystan"},
        "metrics": {"ess_per_s_cold": 1.0, "ess_per_s": 2.0},
    }
    measurement = {"schema_version": 1, "kind": "measurement", "measure": "rwmh"}
    text = json.dumps(run) + "\n" + json.dumps(measurement) + "\n"
    path.write_text(text)
    assert records.migrate(dict(run)) == {
        **run,
        "schema_version": records.SCHEMA_VERSION,
        "kind": "run",
        "precision": "float64",
        "chain_method": "parallel",
        "front_end": "pystan",
        "study": "",
        "sizes": None,
        "metrics": {
            "ess_per_s": 2.0,
            "posterior_sd": {},
            "posterior_mcse_sd": {},
            "superchains": 0,
            "max_rhat_nested": None,
        },
        "threads_per_chain": 1,
        "cores": None,
    }
    with pytest.warns(UserWarning, match="line 1, not a run record"):  # too few fields for a RunRecord
        [kept] = records.read_measurements(path)
    assert "precision" not in kept and kept["schema_version"] == records.SCHEMA_VERSION
    assert path.read_text() == text  # append-only history: upgrades happen in memory


@pytest.mark.parametrize(
    "engine, interface, front_end",
    [
        ("stan", "httpstan", "httpstan"),  # schema 3's "bundled", read as httpstan's build since schema 7
        ("stan", "cmdstanpy", "cmdstan"),
        ("stan", "pystan", "pystan"),
        ("stan", None, "unknown"),
        ("numpyro", None, "numpyro"),
        ("blackjax_chees", None, "blackjax"),
    ],
)
def test_schema_2_front_ends_come_from_the_engine_info(engine, interface, front_end):
    """Schema 2 kept the front end in engine_info; every bundled run then was built by httpstan's own build."""
    info = {"stan_interface": interface} if interface else {}
    assert (
        records.migrate({"schema_version": 2, "kind": "run", "engine": engine, "engine_info": info})["front_end"]
        == front_end
    )


def test_schema_3_runs_had_one_thread_per_chain_and_unrecorded_cores():
    run = records.migrate({"schema_version": 3, "kind": "run", "engine": "stan"})
    assert (run["threads_per_chain"], run["cores"]) == (1, None)
    assert "cores" not in records.migrate({"schema_version": 3, "kind": "measurement"})


def test_schema_4_runs_recorded_no_posterior_sd():
    """The reference gate checks sds only where the run recorded them: never a KeyError on an older record."""
    run = records.migrate({"schema_version": 4, "kind": "run", "metrics": {"posterior_mean": {"mu": 1.0}}})
    assert run["metrics"] == {
        "posterior_mean": {"mu": 1.0},
        "posterior_sd": {},
        "posterior_mcse_sd": {},
        "superchains": 0,
        "max_rhat_nested": None,
    }
    failed = records.migrate({"schema_version": 4, "kind": "run", "metrics": None})  # a crashed run: no metrics
    assert failed["metrics"] is None and failed["schema_version"] == records.SCHEMA_VERSION


def test_schema_5_runs_started_no_superchains():
    """Every run before schema 6 started each chain apart: no superchains and no nested R-hat, so the gates of a
    re-read record judge it by R-hat as it ran."""
    run = records.migrate({"schema_version": 5, "kind": "run", "metrics": {"max_rhat": 1.0}})
    assert run["metrics"] == {"max_rhat": 1.0, "superchains": 0, "max_rhat_nested": None}
    assert records.migrate({"schema_version": 5, "kind": "run", "metrics": None})["metrics"] is None


@pytest.mark.parametrize("front_end", ["bundled", "httpstan"])
def test_schema_7_bundled_runs_fed_httpstans_diagnostic_writer(front_end):
    """Before schema 8 every bundled Stan chain formatted its diagnostics for httpstan's writer: the record says so,
    keeps its label, and a run of another front end or a measurement is left as it was."""
    info = {"stan_threads": False}
    run = records.migrate(
        {"schema_version": 7, "kind": "run", "engine": "stan", "front_end": front_end, "engine_info": info}
    )
    assert run["engine_info"] == {**info, "diagnostic_writer": migrations.DIAGNOSTIC_WRITER_HTTPSTAN}
    assert run["front_end"] == front_end
    cmdstan = records.migrate({"schema_version": 7, "kind": "run", "front_end": "cmdstan", "engine_info": {}})
    assert cmdstan["engine_info"] == {}
    failed = records.migrate({"schema_version": 7, "kind": "run", "front_end": "bundled", "engine_info": {}})
    assert failed["engine_info"] == {}  # no info reported: nothing to say of it
    now = records.migrate(
        {
            "schema_version": 8,
            "kind": "run",
            "front_end": "bundled",
            "engine_info": {"diagnostic_writer": migrations.DIAGNOSTIC_WRITER_NONE},
        }
    )
    assert now["engine_info"]["diagnostic_writer"] == migrations.DIAGNOSTIC_WRITER_NONE


def test_every_committed_record_reads_in_the_current_schema():
    """results/ and the test fixtures: every line is a readable record (no warning), migrated to this schema."""
    for folder in (ROOT / "results", ROOT / "tests" / "fixtures"):
        lines = sum(len(f.read_text().splitlines()) for f in folder.rglob("*.jsonl")) + sum(
            len(gzip.decompress(f.read_bytes()).splitlines()) for f in folder.rglob("*.jsonl.gz")
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            runs, measurements = records.read(folder), records.read_measurements(folder)
        assert len(runs) + len(measurements) == lines
        assert all(r.schema_version == records.SCHEMA_VERSION and r.front_end for r in runs)
        for r in runs:  # sizes as they ran: from the record, never from today's presets
            assert r.sizes is not None or r.status != "ok"


def test_a_closed_folder_committed_gzipped_reads_as_it_was_and_stays_in_the_history(tmp_path):
    from stanjax.runner.core import history

    plain = tmp_path / "plain" / "xeon-2core" / "nightly-1"
    packed = tmp_path / "packed" / "xeon-2core" / "nightly-1"
    for folder in (plain, packed):
        folder.mkdir(parents=True)
    text = FIXTURE.read_bytes()
    (plain / records.RESULTS_FILE).write_bytes(text)
    (packed / (records.RESULTS_FILE + ".gz")).write_bytes(gzip.compress(text))
    assert records.read(packed.parent.parent) == records.read(plain.parent.parent) != []
    assert history.run_folders(tmp_path / "packed") == [packed]
    assert history.summary(packed) == history.summary(plain)


def test_a_closed_campaign_packs_its_summaries_beside_and_reads_as_before(tmp_path, capsys):
    from stanjax.runner.commands.cli import main

    folder = tmp_path / "epyc-2core" / "quick-1"
    folder.mkdir(parents=True)
    odd = json.dumps(json.loads(FIXTURE.read_text().splitlines()[0]), separators=(",", ":"))  # not as written
    original = FIXTURE.read_bytes() + (odd + "\n").encode()
    (folder / records.RESULTS_FILE).write_bytes(original)
    before = records.read(folder)
    assert main(["history", "--close", str(folder)]) == 0 and "MiB ->" in capsys.readouterr().out
    packed = folder / (records.RESULTS_FILE + ".gz")
    assert sorted(p.name for p in folder.iterdir()) == [packing.PARAMETERS_FILE, packed.name]
    assert packing.expand(packed) == original and records.read(folder) == before
    # timings and settings alone: the same runs, the summaries left in the sidecar (the odd line keeps its own)
    light = records.read(folder, summaries=False)
    assert [r.timings for r in light] == [r.timings for r in before] and light[0].metrics.posterior_mean == {}
    assert before[0].metrics.posterior_mean and light[-1].metrics.posterior_mean == before[-1].metrics.posterior_mean
    measured = folder / (records.MEASUREMENTS_FILE + ".gz")  # a study's, gzipped beside: not the sidecar's
    measured.write_bytes(gzip.compress((json.dumps(records.measurement("chains", {"chains": 4})) + "\n").encode()))
    assert len(records.read_measurements(folder)) == 1 and records.read(folder) == before
    measured.unlink()
    lines = gzip.decompress(packed.read_bytes()).decode().splitlines()
    assert json.loads(lines[0])["metrics"]["posterior_mean"] == {}  # moved to the sidecar
    assert lines[-1] == odd  # not as `append` writes it: kept whole
    assert main(["history", "--close", str(folder)]) == 0 and "packed already" in capsys.readouterr().out
    assert main(["history", "--close", str(tmp_path / "nowhere")]) == 2
    # a sidecar packed before LZMA (deflate, np.savez_compressed) is packed again, to the same bytes and records
    sidecar = folder / packing.PARAMETERS_FILE
    lzma_bytes = sidecar.read_bytes()
    with np.load(sidecar) as arrays:
        np.savez_compressed(sidecar, **dict(arrays))
    assert not packing.up_to_date(sidecar) and packing.expand(packed) == original
    assert main(["history", "--close", str(folder)]) == 0 and "MiB ->" in capsys.readouterr().out
    assert packing.up_to_date(sidecar) and sidecar.read_bytes() == lzma_bytes and records.read(folder) == before


def test_every_packed_campaign_gives_back_the_bytes_it_was_packed_from(tmp_path):
    """Nothing lost: each committed sidecar's campaign expands to the plain file whose sha256 it kept; a value
    changed in a sidecar is seen."""
    import hashlib
    import shutil

    import numpy as np

    sidecars = sorted((ROOT / "results").rglob(packing.PARAMETERS_FILE))
    for sidecar in sidecars:
        with np.load(sidecar) as arrays:
            kept = str(arrays["sha256"])
        assert hashlib.sha256(packing.expand(sidecar.parent / (records.RESULTS_FILE + ".gz"))).hexdigest() == kept
    planted = tmp_path / "planted"
    planted.mkdir()
    shutil.copy(FIXTURE, planted / records.RESULTS_FILE)
    packing.close(planted / records.RESULTS_FILE)
    with np.load(planted / packing.PARAMETERS_FILE) as arrays:
        changed = dict(arrays)
    changed["posterior_mean-value"][0, 0] ^= 1  # the last bit of the first mean
    np.savez_compressed(planted / packing.PARAMETERS_FILE, **changed)
    assert hashlib.sha256(packing.expand(planted / (records.RESULTS_FILE + ".gz"))).hexdigest() != str(
        changed["sha256"]
    )


def test_a_job_and_its_record_have_the_same_run_key():
    from stanjax.runner.core.config import Job, Placement, RunConfig
    from stanjax.runner.measure.jobs import base_record

    job = Job("eight_schools-eight_schools_noncentered", "stan", RunConfig(size="tiny"), 2, Placement(), "bundled")
    fixture = records.read(FIXTURE)[0]
    record = msgspec.convert(
        {
            **base_record(job, "c"),
            "status": "ok",
            "valid": True,
            "failed_gates": [],
            "gates": {},
            "provenance": fixture.provenance,
        },
        records.RunRecord,
        from_attributes=True,
    )
    assert record.key() == job.key() and records.done([record]) == {job.key()}
    assert record.sizes == {} and record.sampler_seed == job.config.sampler_seed(2)
    failed = msgspec.structs.replace(record, status="error")
    assert records.done([failed]) == set()


def test_an_unknown_old_schema_is_refused_with_the_versions_that_can_be_read():
    with pytest.raises(records.RecordsError, match="upgrades 1, 2"):
        records.migrate({"schema_version": 0})


def test_the_bundled_stan_of_httpstans_build_is_told_apart_from_the_bundled_stan_built_since():
    """Schema 7: a bundled run whose engine_info does not say whether its program had STAN_THREADS was built by
    httpstan's build (and read by the reader that woke for every message): front end "httpstan", never pooled."""
    old = {"schema_version": 6, "kind": "run", "engine": "stan", "front_end": "bundled", "engine_info": {}}
    new = {**old, "engine_info": {"stan_threads": False}}
    assert records.migrate(old)["front_end"] == "httpstan"
    assert records.migrate(new)["front_end"] == "bundled"
    assert records.migrate({**old, "front_end": "cmdstan"})["front_end"] == "cmdstan"
