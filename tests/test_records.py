"""Records: durable appends, a torn last line skipped, anything else malformed refused, provenance complete."""

import json

import pytest

from runner import records


def test_append_then_read_round_trips(tmp_path):
    path = tmp_path / "r" / "results.jsonl"
    for i in range(3):
        records.append(path, {"schema_version": records.SCHEMA_VERSION, "i": i})
    assert [r["i"] for r in records.read(path)] == [0, 1, 2]
    assert [r["i"] for r in records.read(tmp_path)] == [0, 1, 2]  # a folder is searched for *.jsonl


def test_torn_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "results.jsonl"
    records.append(path, {"schema_version": records.SCHEMA_VERSION, "i": 0})
    with open(path, "a") as handle:
        handle.write('{"schema_version": 1, "i": ')
    with pytest.warns(UserWarning, match="torn last line"):
        assert [r["i"] for r in records.read(path)] == [0]


def test_corrupt_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('not json\n' + json.dumps({"schema_version": records.SCHEMA_VERSION}) + "\n")
    with pytest.raises(records.RecordsError, match=":1: not a JSON record"):
        records.read(path)


def test_provenance_names_machine_versions_and_commit():
    prov = records.provenance()
    assert prov["machine"]["cores"] >= 1 and prov["machine"]["cpu"]
    assert {"jax", "numpyro", "pystan", "httpstan", "arviz", "python"} <= set(prov["versions"])
    assert prov["versions"]["numpyro"] is not None
    assert "git_commit" in prov and "command" in prov
