"""``stanjax history`` on a store it cannot wholly read (issue 80's probes), and the CLI's one plain line per
damaged file, said once however often a command reads it."""

import json
import warnings

import pytest

from stanjax.models import ROOT
from stanjax.runner.commands import history as history_verb
from stanjax.runner.commands.cli import main
from stanjax.runner.core import records

FIXTURE = ROOT / "tests" / "fixtures" / "tiny_repeats2.jsonl"
FUTURE = json.dumps({"schema_version": 999, "kind": "run"}) + "\n"


@pytest.fixture(scope="module")
def run():
    return records.read(FIXTURE)[0]


def store(tmp_path, run, **folders: bytes):
    """A history store of a good folder (one run) and ``folders`` of the given results.jsonl bytes."""
    records.append(tmp_path / "xeon-2core" / "good" / records.RESULTS_FILE, run)
    for name, content in folders.items():
        (tmp_path / "xeon-2core" / name).mkdir()
        (tmp_path / "xeon-2core" / name / records.RESULTS_FILE).write_bytes(content)
    return tmp_path


@pytest.mark.parametrize(
    "content, why",
    [
        (b"", "no records (an empty file)"),  # a disk full at the first append
        (b"\x00\xff garbage\n[1, 2]\n", "no records (unreadable line(s) [1, 2])"),
        (FUTURE.encode() * 2, "nothing but 2 record(s) of schema_version 999 (lines [1, 2]; this stanjax reads"),
    ],
    ids=["empty", "garbage", "future-schema"],
)
def test_history_lists_what_it_can_read_and_says_what_it_could_not(tmp_path, run, capsys, content, why):
    """The good folder is listed (exit 0); the other is one line on stderr naming it and why, no traceback."""
    assert main(["history", str(store(tmp_path, run, bad=content))]) == 0
    out, err = capsys.readouterr()
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [["xeon-2core", "good"]]
    [line] = err.splitlines()
    assert line.startswith(f"stanjax history: warning: {tmp_path / 'xeon-2core' / 'bad'}") and why in line


def test_history_of_nothing_readable_exits_2_with_a_line_per_folder(tmp_path, capsys):
    for name, content in (("empty", ""), ("future", FUTURE)):
        (tmp_path / "m" / name).mkdir(parents=True)
        (tmp_path / "m" / name / records.RESULTS_FILE).write_text(content)
    assert main(["history", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 2
    assert all(line.startswith("stanjax history: error: ") for line in err.splitlines())
    assert "m/empty: no records (an empty file)" in err and "schema_version 999" in err
    assert main(["history", str(tmp_path / "m")]) == 2  # no <machine>/<folder>/results.jsonl at all
    assert "error: no <machine>/<folder>/results.jsonl under" in capsys.readouterr().err


def test_a_damaged_line_among_runs_is_listed_and_said_once_as_one_plain_line(tmp_path, run, capsys):
    folder = tmp_path / "xeon-2core" / "good"
    store(tmp_path, run)
    with open(folder / records.RESULTS_FILE, "a") as handle:
        handle.write("not json\n")
    records.append(folder / records.RESULTS_FILE, run)
    assert main(["history", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    row = out.splitlines()[1].split()
    assert row[:2] == ["xeon-2core", "good"] and row[3] == "2"  # both runs: the line between them skipped
    assert err == f"stanjax history: warning: {folder / records.RESULTS_FILE}: skipped unreadable line(s) [2]\n"


def test_a_file_read_twice_in_one_command_is_said_once_and_again_by_the_next_command(
    tmp_path, run, capsys, monkeypatch
):
    """One plain line on stderr (not Python's warning format with its source line); the API still warns."""
    path = store(tmp_path, run, damaged=b"[1]\n") / "xeon-2core" / "damaged" / records.RESULTS_FILE

    def read_twice(args):
        records.read(path)
        records.read_measurements(path)
        warnings.warn("any other warning, as Python shows it", UserWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(history_verb, "main", read_twice)
    line = f"stanjax history: warning: {path}: skipped unreadable line(s) [1]\n"
    for _ in range(2):
        with pytest.warns(UserWarning, match="any other warning") as other:
            assert main(["history"]) == 0
        assert capsys.readouterr().err == line and len(other) == 1
    with pytest.warns(records.SkippedLines, match=r"unreadable line\(s\) \[1\]"):
        records.read(path)
