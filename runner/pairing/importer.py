"""A posteriordb posterior laid out as a pair of the zoo, from a local posteriordb checkout (``stanjax import``).

What is carried is the posterior's own: its Stan program (unchanged, a header naming where it came from), its data
set (the entries the program declares, typed as declared) and, where posteriordb has reference draws, their summary
as an outside truth (:mod:`stanjax.models.posteriordb`). Never posteriordb's code. What the user writes is the NumPyro port,
of which a stub with the data signature and the parameters to sample is laid out.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stanjax import models
from stanjax.models import ROOT, UsageError
from stanjax.runner.measure import stan_program
from stanjax.runner.measure.references import element_names, from_posteriordb, read_posteriordb_json
from stanjax.runner.pairing import source_text

LICENCE = """posteriordb's licence (BSD 3-Clause), whose notice its redistributions retain:

    Copyright (c) 2011-2024, Stan Developers and their Assignees
    All rights reserved.

    Redistribution and use in source and binary forms, with or without modification, are permitted provided that
    the following conditions are met:
    * Redistributions of source code must retain the above copyright notice, this list of conditions and the
      following disclaimer.
    * Redistributions in binary form must reproduce the above copyright notice, this list of conditions and the
      following disclaimer in the documentation and/or other materials provided with the distribution.
    * Neither the name of the copyright holder nor the names of its contributors may be used to endorse or promote
      products derived from this software without specific prior written permission.

    THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED
    WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR
    PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT,
    INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
    SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
    THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING
    IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""

SOURCE_HEAD = """# Carried from posteriordb

Each posterior's Stan program (in `stan/`), data set and reference summary (here) come from
github.com/stan-dev/posteriordb, as `stanjax import` laid them out; none of posteriordb's code is carried. A data
file holds posteriordb's data set less the entries the program does not declare; a reference file summarises
posteriordb's reference draws (mean, sd and their MCSEs per element, over its chains). Per posterior:

"""


DATABASE = "posterior_database"  # the folder of posteriordb's repository that holds the posteriors
# posteriordb's names of posteriors, models, data sets and reference posteriors: each becomes a file name here
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,199}")
COMMIT = re.compile(r"[0-9a-f]{4,40}")


@dataclass(frozen=True)
class Posterior:
    """A posterior of a posteriordb checkout: its files there and the facts its info file gives."""

    database: Path  # the checkout's posterior_database folder
    name: str
    model_name: str
    data_name: str
    reference_name: str | None
    keywords: tuple[str, ...]
    commit: str  # the checkout's commit, or "unknown commit" where it is not a git work tree

    @property
    def program(self) -> Path:
        return self.database / "models" / "stan" / f"{self.model_name}.stan"

    @property
    def data_file(self) -> Path:
        return self.database / "data" / "data" / f"{self.data_name}.json.zip"

    @property
    def draws_file(self) -> Path | None:
        if not self.reference_name:
            return None
        return self.database / "reference_posteriors" / "draws" / "draws" / f"{self.reference_name}.json.zip"

    def source(self, path: Path) -> str:
        """Where in posteriordb ``path`` is, named as its repository names it (whatever the checkout's folder)."""
        return f"stan-dev/posteriordb at {self.commit}: {DATABASE}/{path.relative_to(self.database).as_posix()}"


def database(path: Path) -> Path:
    """The ``posterior_database`` folder of a posteriordb checkout given as its root or as that folder."""
    for folder in (path / DATABASE, path):
        if (folder / "posteriors").is_dir():
            return folder
    raise UsageError(f"{path} is not a posteriordb checkout (no posterior_database/posteriors folder in it)")


def _commit(folder: Path) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
    except OSError:
        return "unknown commit"
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and COMMIT.fullmatch(commit) else "unknown commit"


def posterior(path: Path, name: str) -> Posterior:
    """A posterior of the checkout at ``path`` by posteriordb's name; an unknown name is a UsageError naming the
    nearest ones."""
    checked_name("posterior", name)
    db = database(path)
    info_file = db / "posteriors" / f"{name}.json"
    if not info_file.exists():
        known = sorted(p.stem for p in (db / "posteriors").glob("*.json"))
        near = difflib.get_close_matches(name, known, n=3)
        raise UsageError(
            f"posteriordb at {path} has no posterior '{name}'" + (f" (nearest: {', '.join(near)})" if near else "")
        )
    info = read_info(info_file)
    found = Posterior(
        db,
        name,
        info["model_name"],
        info["data_name"],
        info["reference_posterior_name"],
        info["keywords"],
        _commit(db),
    )
    for needed in (found.program, found.data_file):
        if not needed.exists():
            raise UsageError(f"posteriordb at {path} lacks {needed.relative_to(db)}")
    return found


def checked_name(kind: str, name: object, where: str = "") -> str:
    """A posteriordb name that is to become a file name here: letters, digits, '_' and '-' (every name posteriordb
    has), so no name can reach outside the folder it is written in; else a UsageError."""
    if not (isinstance(name, str) and NAME.fullmatch(name)):
        raise UsageError(
            f"{where}{kind} name {name!r} is not a posteriordb name (letters, digits, '_' and '-'): nothing written"
        )
    return name


def read_info(info_file: Path) -> dict:
    """A posterior's info file, its names checked (:func:`checked_name`) and its keywords a tuple of texts: the
    fields the lay-out writes from; anything else in it is a UsageError naming the file."""
    where = f"{info_file.parent.name}/{info_file.name}: "
    try:
        info = json.loads(info_file.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise UsageError(f"{where}not JSON: {err}") from None
    if not isinstance(info, dict):
        raise UsageError(f"{where}holds no JSON object")
    reference = info.get("reference_posterior_name")
    keywords = info.get("keywords") or ()
    if not (isinstance(keywords, list | tuple) and all(isinstance(word, str) for word in keywords)):
        raise UsageError(f"{where}keywords {keywords!r} is not a list of texts")
    return {
        "model_name": checked_name("model", info.get("model_name"), where),
        "data_name": checked_name("data", info.get("data_name"), where),
        "reference_posterior_name": None if reference is None else checked_name("reference", reference, where),
        "keywords": tuple(keywords),
    }


def typed_data(given: dict, program: stan_program.StanProgram, where: str) -> tuple[dict, list[str]]:
    """The entries the program's data block declares, ints as JSON ints and reals as JSON floats; and the keys
    left out (declared by none)."""
    data = {}
    for declaration in program.data:
        if declaration.name not in given:
            raise UsageError(f"{where} has no entry '{declaration.name}', which the program's data block declares")
        value = np.asarray(given[declaration.name])
        value = value.astype(np.int64) if declaration.is_int() else value.astype(np.float64)
        data[declaration.name] = value.tolist()
    return data, sorted(set(given) - set(data))


def shape_text(declaration: stan_program.Declaration, program: stan_program.StanProgram) -> tuple:
    """The parameter's sizes as the spec writes them, in data-block names: literal numbers as ints, expressions as
    Stan writes them, a size the transformed data define as its definition (diamonds' ``Kc`` as ``K - 1``)."""
    sizes = []
    for size in declaration.sizes():
        text = stan_program.text(size)
        if text in program.transformed_data:
            text = stan_program.text(program.transformed_data[text])
        sizes.append(text)
    return tuple(int(size) if size.isdigit() else size for size in sizes)


def parameter_text(name: str, shape: tuple) -> str:
    """``Parameter("beta", ("D",))`` as a spec file writes it."""
    if not shape:
        return f"Parameter({source_text.string(name)})"
    sizes = ", ".join(str(size) if isinstance(size, int) else source_text.string(size) for size in shape)
    return f"Parameter({source_text.string(name)}, ({sizes}{',' if len(shape) == 1 else ''}))"


# The files written here are imported later: every text from posteriordb or the command line (names, keywords, the
# command with its paths) enters them as a literal of :mod:`.source_text`, never as code.
SPEC_TEMPLATE = """{doc}

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = {name}
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / {data_file}, entries=({entries}))

SPEC = ModelSpec(
    id=SPEC_ID,
    title={name},
    description={description},
    regime="",  # what dominates a gradient's cost, in a phrase (the report shows it)
    parameters=({parameters}),
    sizes=posteriordb.SIZES,
    generate=generate,{truth}
)
"""

STUB_TEMPLATE = """{doc}

import numpyro
import numpyro.distributions as dist


def {model}({arguments}):
    raise NotImplementedError({message})
"""


def lay_out(found: Posterior, into: Path, command: str) -> list[Path]:
    """Write the pair's files under ``into`` (a folder laid out as this repository: models/, stan/, jax_models/);
    the paths written. Refuses (UsageError) a posterior already laid out or a model name another model has."""
    spec_file = into / "models" / f"{found.name}.py"
    stan_file = into / "stan" / f"{found.model_name}.stan"
    jax_file = into / "jax_models" / f"{found.model_name}.py"
    carried = into / "models" / "posteriordb"
    data_file = carried / f"{found.data_name}.json"
    reference_file = carried / f"{found.name}.reference.json"
    for path in (spec_file, stan_file, jax_file, data_file, reference_file, carried / "SOURCE.md"):
        if not path.resolve().is_relative_to(into.resolve()):  # a link inside ``into`` that leads out of it
            raise UsageError(f"{path} lies outside --into {into} (through a link): nothing written")
    if spec_file.exists():
        raise UsageError(f"{spec_file} exists: {found.name} is laid out already")
    taken = {spec.model_name: spec.id for spec in models.registry().values()}
    published = found.program.read_text()
    # One program, several data sets (posteriordb's nes1972-nes ... nes2000-nes): the program laid out already,
    # unchanged, is the pair's; its port serves every data set.
    shared = stan_file.exists() and stan_file.read_text().split("\n", 2)[-1] == published
    if not shared and (found.model_name in taken or stan_file.exists()):
        raise UsageError(f"the model name '{found.model_name}' is taken (by {taken.get(found.model_name, stan_file)})")
    written = []

    def write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)

    if not shared:
        write(
            stan_file,
            f"// posteriordb's program {found.model_name}, unchanged: {found.source(found.program)}\n"
            f"// (BSD 3-Clause; models/posteriordb/SOURCE.md)\n" + published,
        )
    program = stan_program.read_program(stan_file)
    given = read_posteriordb_json(found.data_file)
    data, _ = typed_data(given, program, found.data_file.name)
    # One data set, several programs (earnings-earn_height, earnings-logearn_height_male, ...): the file holds the
    # entries any of them declares, each spec reads its own (``entries``).
    before = json.loads(data_file.read_text())["data"] if data_file.exists() else {}
    if any(before[key] != value for key, value in data.items() if key in before):
        raise UsageError(f"{data_file} exists and holds other data than posteriordb's {found.data_name}")
    data = before | data
    if data != before:
        left_out = sorted(set(given) - set(data))
        source = {"source": found.source(found.data_file), "left_out": left_out, "written_by": command}
        write(data_file, json.dumps({**source, "data": data}) + "\n")
    parameters = [(d.name, shape_text(d, program)) for d in program.parameters]
    truth, truth_doc = "", ", with no reference posterior in posteriordb: make one with `stanjax reference`"
    if found.draws_file and found.draws_file.exists():
        shapes: dict[str, tuple | None] = {
            name: models.Parameter(name, shape).resolve_shape(data) for name, shape in parameters
        }
        summary = from_posteriordb(found.draws_file, element_names(shapes))
        header = {
            "source": f"posteriordb reference draws ({found.source(found.draws_file)}): "
            f"{summary['chains']} chains of {summary['draws']} draws",
            "command": command,
            "without": summary["without"],
            "generated_file": "Made by the command below from posteriordb's draws; do not edit.",
        }
        write(reference_file, json.dumps({"header": header, "parameters": summary["parameters"]}, indent=1) + "\n")
        truth = (
            f"\n    ground_truth=posteriordb.outside_truth(CARRIED / {source_text.string(reference_file.name)}, SPEC_ID, "
            "generate),"
        )
        truth_doc = ", and its reference posterior as an outside truth"
    keywords = f" ({', '.join(found.keywords)})" if found.keywords else ""
    doc = textwrap.fill(
        f"posteriordb's posterior {found.name}: its Stan program and data set as published"
        f"{truth_doc} (stan-dev/posteriordb at {found.commit}; models/posteriordb/SOURCE.md). "
        f"Laid out by `{command}`.",
        width=116,
        break_long_words=False,
        break_on_hyphens=False,
    )
    write(
        spec_file,
        SPEC_TEMPLATE.format(
            name=source_text.string(found.name),
            doc=source_text.docstring(doc),
            data_file=source_text.string(data_file.name),
            entries=", ".join(source_text.string(d.name) for d in program.data)
            + ("," if len(program.data) == 1 else ""),
            description=source_text.string(f"posteriordb's {found.name}{keywords}."),
            truth=truth,
            parameters=", ".join(parameter_text(name, shape) for name, shape in parameters)
            + ("," if len(parameters) == 1 else ""),
        ),
    )
    if not shared and not jax_file.exists():
        sites = ", ".join(f"{d.name} ({d.text()})" for d in program.parameters)
        write(
            jax_file,
            STUB_TEMPLATE.format(
                doc=source_text.docstring(
                    f"NumPyro port of posteriordb's {found.model_name} (stan/{found.model_name}.stan): to be written "
                    "(models/README.md).\n\n"
                    + textwrap.fill(f"Sample sites named as the Stan parameters: {sites}.", width=116)
                ),
                model=found.model_name,
                arguments=", ".join(d.name for d in program.data),
                message=source_text.string(
                    f"write the NumPyro model of stan/{found.model_name}.stan here (models/README.md)"
                ),
            ),
        )
    source_md = carried / "SOURCE.md"
    entry = (
        f"- `{found.name}`: `{found.program.relative_to(found.database.parent)}`, "
        f"`{found.data_file.relative_to(found.database.parent)}`"
        # a truth was written only from a draws file
        + (
            f", `{found.draws_file.relative_to(found.database.parent)}`"
            if truth and found.draws_file
            else " (no reference draws)"
        )
        + f" at {found.commit}.\n"
    )
    head = source_md.read_text() if source_md.exists() else SOURCE_HEAD
    entries, _, _ = head.partition("\n" + LICENCE)
    write(source_md, entries.rstrip("\n") + "\n" + entry + "\n" + LICENCE)
    models.registry.cache_clear()
    return written


def command_line(name: str, path: Path, into: Path) -> str:
    """The command as a user would type it, for the headers (the checkout's path as given)."""
    words = ["stanjax", "import", name, "--posteriordb", str(path)]
    return shlex.join(words + (["--into", str(into)] if into.resolve() != ROOT else []))
