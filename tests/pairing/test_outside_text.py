"""Text from outside never becomes code, and a name never becomes a path outside its folder (issue 80's probe):
the attacker's payloads (tests/fixtures/attacks/payloads.json, each running ``touch $STANJAX_PWNED`` should it ever
run) planted in a data path given to ``stanjax check`` and in a posteriordb checkout's info file, then the files
written are imported as the next command would import them."""

import ast
import json
import shutil
from pathlib import Path

import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.commands.cli import main
from stanjax.runner.pairing import source_text

PAYLOADS = {
    name: text
    for name, text in json.loads((ROOT / "tests" / "fixtures" / "attacks" / "payloads.json").read_text()).items()
    if not name.startswith("_")
}
CODE = [name for name in PAYLOADS if not name.startswith(("path_", "absolute"))]
EXAMPLE = ROOT / "examples" / "poisson"


@pytest.fixture
def pwned(tmp_path, monkeypatch) -> Path:
    """The file a payload that ran as code would create (an absolute path: a child process in another folder too)."""
    marker = tmp_path / "PWNED"
    monkeypatch.setenv("STANJAX_PWNED", str(marker))
    monkeypatch.chdir(tmp_path)
    return marker


@pytest.mark.parametrize("name", PAYLOADS)
def test_a_literal_of_outside_text_is_that_text_and_nothing_else(name, pwned):
    text = PAYLOADS[name]
    module = f"{source_text.docstring(text)}\n\nX = {source_text.string(text)}\nY = {source_text.docstring(text)}\n"
    body = ast.parse(module).body
    assert [type(node) for node in body] == [ast.Expr, ast.Assign, ast.Assign]  # no statement of the text's own
    assert [ast.literal_eval(node.value) for node in body] == [text, text, text]
    exec(compile(module, "<spec>", "exec"), {})
    assert not pwned.exists()
    assert "\n" not in source_text.string(text)


def test_a_plain_text_is_written_as_ruff_writes_it():
    assert source_text.string("garch-garch11t") == '"garch-garch11t"'
    assert source_text.string('say "hi"') == "'say \"hi\"'"
    assert source_text.docstring("one\ntwo") == '"""one\ntwo"""'


def test_a_planted_bare_format_would_run_the_payload(pwned):
    """The regression the literals guard against, planted: the text written into the docstring as it is."""
    module = f'"""Written by `stanjax check`: a.stan and a.py on {PAYLOADS["docstring_breakout"]}.json."""\n'
    exec(compile(module, "<spec>", "exec"), {})
    assert pwned.exists()


@pytest.mark.parametrize("name", CODE)
def test_a_data_path_given_to_check_stays_text_in_the_laid_out_spec(name, pwned, own_models, tmp_path, capsys):
    folder = tmp_path / PAYLOADS[name].replace("/", "_").replace("\x00", "_")[:60].replace("\udcff", "_")
    folder.mkdir()
    stan, py = folder / "poisson_regression.stan", folder / "poisson_regression.py"
    shutil.copyfile(EXAMPLE / "stan" / stan.name, stan)
    shutil.copyfile(EXAMPLE / "jax_models" / py.name, py)
    data = folder / (folder.name + ".json")
    shutil.copyfile(EXAMPLE / "counts.json", data)
    out = tmp_path / "out"
    argv = ["check", str(stan), str(py), "--data", str(data), "--stop-after", "static", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    assert not pwned.exists()
    (spec_file,) = (out / "model" / "models").glob("*.py")
    docstring = ast.get_docstring(ast.parse(spec_file.read_text()), clean=False)
    assert str(data) in docstring and str(stan) in docstring
    models.registry.cache_clear()  # imported again, as the next check of the folder would
    models.add_model_dir(out / "model")
    assert models.get(spec_file.stem).description == f"{stan.name} and {py.name} on {data.name}"
    assert not pwned.exists()


@pytest.fixture
def into(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(models.MODEL_DIRS_ENV, "")
    models.registry.cache_clear()
    yield tmp_path / "deep" / "er" / "mine"
    models.registry.cache_clear()


def edit_info(checkout: Path, name: str, **fields) -> None:
    info_file = checkout / "posterior_database" / "posteriors" / f"{name}.json"
    info_file.write_text(json.dumps(json.loads(info_file.read_text()) | fields))


@pytest.mark.parametrize("name", CODE)
def test_posteriordbs_keywords_stay_text_in_the_imported_spec(name, checkout, into, pwned, capsys):
    edit_info(checkout, "garch-garch11t", keywords=["time series", PAYLOADS[name]])
    assert main(["import", "garch-garch11t", "--posteriordb", str(checkout), "--into", str(into)]) == 0
    models.add_model_dir(into)  # the folder loaded, as the next command loads it
    spec = models.get("garch-garch11t")
    assert spec.description == f"posteriordb's garch-garch11t (time series, {PAYLOADS[name]})."
    stub = ast.parse((into / "jax_models" / "garch11t.py").read_text())
    assert [type(node) for node in stub.body] == [ast.Expr, ast.Import, ast.Import, ast.FunctionDef]
    assert not pwned.exists()


@pytest.mark.parametrize(
    "field, name",
    [("model_name", "path_up_model"), ("data_name", "path_up_data"), ("model_name", "absolute")],
)
def test_a_name_in_posteriordbs_info_file_never_leads_outside_into(field, name, checkout, into, tmp_path, capsys):
    edit_info(checkout, "garch-garch11t", **{field: PAYLOADS[name]})
    before = sorted(tmp_path.rglob("*"))
    assert main(["import", "garch-garch11t", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"stanjax import: error: posteriors/garch-garch11t.json: {field.split('_')[0]} name "
        f"{PAYLOADS[name]!r} is not a posteriordb name (letters, digits, '_' and '-'): nothing written\n"
    )
    assert sorted(tmp_path.rglob("*")) == before  # nothing written anywhere, --into not even created


@pytest.mark.parametrize("name", ["path_up_posterior", "absolute"])
def test_a_posterior_name_on_the_command_line_never_leads_outside_into(name, checkout, into, tmp_path, capsys):
    before = sorted(tmp_path.rglob("*"))
    assert main(["import", PAYLOADS[name], "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert "is not a posteriordb name" in capsys.readouterr().err
    assert sorted(tmp_path.rglob("*")) == before


def test_a_link_inside_into_that_leads_out_of_it_is_refused(checkout, into, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    into.mkdir(parents=True)
    (into / "stan").symlink_to(elsewhere)
    assert main(["import", "garch-garch11t", "--posteriordb", str(checkout), "--into", str(into)]) == 2
    assert "lies outside --into" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == [] and not (into / "models").exists()


def test_a_checkouts_folder_name_never_enters_the_stan_program(tmp_path, checkout, into, capsys):
    """posteriordb's folder given by a name of the user's (its posterior_database folder itself, renamed): the
    program's header names posteriordb's own path, so no line break in a folder name reaches Stan's code."""
    renamed = tmp_path / "db\n}\nmodel { target += 1; }\n//"
    (checkout / "posterior_database").rename(renamed)
    assert main(["import", "garch-garch11t", "--posteriordb", str(renamed), "--into", str(into)]) == 0
    header = (into / "stan" / "garch11t.stan").read_text().splitlines()[:2]
    assert header[0].endswith(": posterior_database/models/stan/garch11t.stan") and header[1].startswith("// (BSD")
