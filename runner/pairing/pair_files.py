"""A Stan program, a NumPyro file and a JSON data file, as ``stanjax check`` takes them: laid out as a model folder
(the layout ``--model-dir`` reads: models/<id>.py and .json, stan/, jax_models/; its one size preset ``given``), so
the pair is checked as a model of the zoo is."""

from __future__ import annotations

import inspect
import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from stanjax import jax_models, models
from stanjax.models import ModelSpec, UsageError, option
from stanjax.runner.engines.stan import check_file
from stanjax.runner.measure import stan_program
from stanjax.runner.pairing import source_text

GIVEN = "given"  # the size preset of a pair checked on a data file
PAIR = ("stan", "numpyro")  # the check's two sides: their runs give the verdict, the agreement and the speed
NUTPIE = ("nutpie_stan", "nutpie_jax")  # nutpie on each side's program, beside them where asked (``--engines``)


@dataclass(frozen=True)
class CheckRequest:
    """What to check and how (the options of ``stanjax check``; the CLI's namespace has the same names): ``target``
    a posterior ID, or a Stan program and a NumPyro file (then ``data``, a JSON file in Stan's format)."""

    target: list[str]
    data: Path | None = None
    model_dir: Path | None = None
    size: str = "tiny"
    seed: int = 1
    points: int = 5
    chains: int = 4
    warmup: int = 500
    draws: int = 1000
    repeats: int = 3
    timeout: float = 600.0
    budget: float = 10.0  # minutes the runs may take, as estimated before they start
    reference: Path | None = None
    stop_after: str = "run"
    out: Path | None = None
    wait: bool = False  # for OUT held by another writer: wait (else refused, naming it)
    engines: list[str] = field(default_factory=lambda: list(PAIR))  # the pair, and nutpie's engines where asked


def check_engines(engines: list[str]) -> None:
    """The check's engines: the pair, and any of nutpie's; an unknown one is refused with the nearest, nutpie on
    the Stan program where no BridgeStan build is found with the reason and what would build one."""
    from stanjax.runner.core import engine_registry

    for name in engines:
        if name not in PAIR + NUTPIE:
            raise models.UnknownChoice("engine", name, PAIR + NUTPIE)
    if not set(PAIR) <= set(engines):
        raise UsageError(
            f"{option('engines', ' '.join(engines))}: the check compares Stan and NumPyro, so both stay; nutpie "
            f"joins them (e.g. {option('engines', 'stan numpyro nutpie_stan nutpie_jax')})"
        )
    for name in engines:
        engine_registry.entry(name).front_end()  # nutpie_stan without BridgeStan: refused here


def planned(args: CheckRequest) -> tuple[str, tuple[Path, Path] | None]:
    """The posterior ID the check will have and the user's Stan and NumPyro files (None for a posterior ID), read
    from the request's text alone: its folder is known, and held (one writer), before anything is laid out or
    imported. A request of the wrong shape is a UsageError."""
    if len(args.target) == 1 and not args.target[0].endswith((".stan", ".py")):
        if args.data:
            raise UsageError(f"{option('data')} goes with MODEL.stan MODEL.py; a posterior ID brings its own data")
        if args.reference:
            raise UsageError(
                f"{option('reference')} goes with MODEL.stan MODEL.py; a posterior ID is checked against its own "
                "reference"
            )
        if not POSTERIOR_ID.fullmatch(args.target[0]):  # it names the check's folder: no path in it
            raise UsageError(f"{args.target[0]!r} is not a posterior ID (letters, digits, '_', '-' and '.')")
        return args.target[0], None
    if len(args.target) != 2 or not (args.target[0].endswith(".stan") and args.target[1].endswith(".py")):
        raise UsageError(f"expected a posterior ID, or MODEL.stan MODEL.py {option('data', 'DATA.json')}")
    stan_file, numpyro_file = map(Path, args.target)
    if args.data is None:
        raise UsageError(f"MODEL.stan MODEL.py needs {option('data', 'DATA.json')} (Stan's JSON format)")
    for path in (stan_file, numpyro_file, args.data):
        if not path.is_file():
            raise UsageError(f"no such file: {path}")
    return f"{_identifier(args.data.stem)}-{_identifier(numpyro_file.stem)}", (stan_file, numpyro_file)


POSTERIOR_ID = re.compile(r"\w[\w.-]*")


def target(args: CheckRequest) -> tuple[ModelSpec, str, list[str], tuple[Path, Path] | None]:
    """The spec to check, its size preset, the data keys left out of it (``ignored_keys``) and the user's Stan and
    NumPyro files (None for a posterior ID); a pair of files is laid out as a model folder first."""
    spec_id, files = planned(args)
    set_aside_earlier(out_dir(args, spec_id))  # first: a refusal below writes its page in its place
    if args.model_dir:
        models.add_model_dir(args.model_dir)
    if files is None:
        return models.get(spec_id), args.size, [], None
    assert args.data is not None, "planned() refuses a pair of files without data"
    folder = out_dir(args, spec_id) / "model"
    spec, ignored = lay_out_pair(*files, args.data, spec_id, folder, args.reference is not None)
    return spec, GIVEN, ignored, files


EARLIER = "earlier"  # OUT/earlier/<when>/: an earlier check's page and model folder, which a new check would replace


def set_aside_earlier(out: Path) -> Path | None:
    """Move an earlier check's page and model folder in ``out`` to ``OUT/earlier/<its page's UTC time>/``, so that
    a check (a failing one too) never replaces what an earlier one left; the runs' records stay where they are,
    appended to. The folder they went to, or None where there was nothing."""
    found = [path for path in (out / "check.html", out / "model") if path.exists()]
    if not found:
        return None
    when = datetime.fromtimestamp(found[0].stat().st_mtime, UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    folder = out / EARLIER / when
    folder.mkdir(parents=True, exist_ok=True)
    for path in found:
        path.rename(folder / path.name)
    return folder


def as_given(text: str, spec: ModelSpec, given: tuple[Path, Path] | None) -> str:
    """A message's location in the laid-out copy of the user's NumPyro file (``static_checks.where``), named as the
    user gave the file."""
    return text if given is None else text.replace(f" of {spec.jax_file.name}: ", f" of {given[1]}: ")


def out_dir(args: CheckRequest, spec_id: str) -> Path:
    return args.out or Path("out/check") / spec_id


def _identifier(text: str) -> str:
    return re.sub(r"\W", "_", text.replace("-", "_"))


def read_json_data(path: Path) -> dict:
    """Stan's JSON data format as the generators give data: lists as NumPy arrays (ints int64, else float64)."""
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise UsageError(f"{path} is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} holds no JSON object of data entries")
    return {key: np.asarray(value) if isinstance(value, list) else value for key, value in data.items()}


# Every text from outside (the paths, the file names) enters as a literal of :mod:`.source_text`: never as code.
SPEC_TEMPLATE = '''{doc}

from dataclasses import dataclass
from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb
from stanjax.runner.pairing.pair_files import read_json_data


def generate(seed: int) -> dict:
    """The data file as given (the seed is unused)."""
    return read_json_data(Path(__file__).with_suffix(".json"))


SPEC = ModelSpec(
    id={id},
    description={description},
    parameters=({parameters}),
    sizes={{{given!r}: {{}}}},
    generate=generate,{truth}
)
'''
# The spec's outside truth, where ``--reference`` gave one (``reference_file``).
TRUTH = """
    ground_truth=posteriordb.outside_truth(Path(__file__).with_suffix(".reference.json"), {id}, generate),"""


def reference_file(spec: ModelSpec) -> Path:
    """Where a laid-out pair keeps the summary of ``--reference`` that its spec reads as its outside truth."""
    return spec.stan_dir.parent / "models" / f"{spec.id}.reference.json"


def lay_out_pair(
    stan_file: Path, numpyro_file: Path, data_file: Path, spec_id: str, folder: Path, with_reference: bool = False
) -> tuple[ModelSpec, list[str]]:
    """The pair as a model folder (models/<id>.py and .json, stan/, jax_models/), its parameters (names and shapes
    on the data) read from the Stan program; the spec, from the registry, and the data keys its data file leaves
    out (``ignored_keys``). ``with_reference``: the spec's outside truth is ``reference_file(spec)``, which the
    static stage writes from ``--reference`` before anything runs, so that every run is gated on it."""
    data = read_json_data(data_file)
    check_file(stan_file, stan_file.name)  # stanc's own message, naming the user's file and line, not the copy's
    for sub in ("models", "stan", "jax_models"):
        (folder / sub).mkdir(parents=True)
    model_name = spec_id.split("-", 1)[1]
    shutil.copyfile(stan_file, folder / "stan" / f"{model_name}.stan")
    shutil.copyfile(numpyro_file, folder / "jax_models" / f"{model_name}.py")
    shutil.copyfile(data_file, folder / "models" / f"{spec_id}.json")
    provisional = ModelSpec(spec_id, "", (), {GIVEN: {}}, lambda seed: data, home=folder.resolve())
    program = stan_program.read_program(provisional.stan_file)
    env = program.environment(data)
    parameters = [(p.name, declared_shape(p, env, stan_file)) for p in program.parameters]
    (folder / "models" / f"{spec_id}.py").write_text(
        SPEC_TEMPLATE.format(
            doc=source_text.docstring(
                f"Written by `stanjax check`: {stan_file} and {numpyro_file} on {data_file}, laid out as a model folder."
            ),
            id=source_text.string(spec_id),
            given=GIVEN,
            description=source_text.string(f"{stan_file.name} and {numpyro_file.name} on {data_file.name}"),
            parameters="".join(f"Parameter({name!r}, {shape!r}), " for name, shape in parameters),
            truth=TRUTH.format(id=source_text.string(spec_id)) if with_reference else "",
        )
    )
    models.add_model_dir(folder)
    spec = models.get(spec_id)
    ignored = ignored_keys(data, program, spec)
    if ignored:
        given = json.loads(data_file.read_text())
        (folder / "models" / f"{spec_id}.json").write_text(
            json.dumps({key: value for key, value in given.items() if key not in ignored})
        )
    return spec, ignored


def ignored_keys(data: dict, program: stan_program.StanProgram, spec: ModelSpec) -> list[str]:
    """Data keys that neither the Stan data block declares nor the NumPyro function names as an argument: left out
    of both, as CmdStan ignores keys its data block does not declare (posteriordb's data files carry such keys). A
    key the NumPyro function takes but Stan does not declare stays, and the static checks refuse it (the two
    models would see different data); where the function does not load, none (the static checks say why)."""
    try:
        arguments = inspect.signature(jax_models.load(spec.jax_file)).parameters
    except Exception:  # a user's module: the static checks report it in one line
        return []
    declared = {d.name for d in program.data}
    return sorted(key for key in data if key not in declared and key not in arguments)


def declared_shape(parameter: stan_program.Declaration, env: dict, stan_file: Path) -> tuple:
    """The shape on the data; where it is not known on them (a size the data lack), the sizes as Stan writes them,
    so that the static checks say what is missing."""
    shape = parameter.shape(env)
    if shape is not None:
        return shape
    try:
        return tuple(stan_program.text(size) for size in parameter.sizes())
    except stan_program.Unknown as err:
        raise UsageError(
            f"{stan_file.name}: parameter '{parameter.name}' has a type `stanjax check` does not compare: {err}"
        ) from None
