"""A Stan program's data, transformed data and parameters declarations as stanc parses them, without a C++ compile.

stanc (bundled with httpstan) writes the program's syntax tree (``--debug-ast``, a fraction of a second); its
declarations give each variable's sized type and constraint, and the sizes and bounds that follow from the data
alone are evaluated on them. Read by the static checks (:mod:`stanjax.runner.measure.static_checks`), by a pair's layout as
a model folder (:mod:`stanjax.runner.pairing.pair_files`) and by ``stanjax import`` (:mod:`stanjax.runner.pairing.importer`).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stanjax.models import UsageError
from stanjax.runner.engines.stanc import stanc

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[()]|[^\s()]+')


def _sexp(text: str) -> list:
    """stanc's ``--debug-ast`` output (an OCaml s-expression) as nested lists of strings."""
    stack: list[list] = [[]]
    for token in _TOKEN.findall(text):
        if token == "(":
            stack.append([])
        elif token == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    return stack[0][0]


def _field(record: list, key: str) -> list:
    """The value(s) after ``key`` in a record of (key value ...) lists."""
    return next(item[1:] for item in record if isinstance(item, list) and item and item[0] == key)


def _expr(node: list) -> list | str:
    return _field(node, "expr")[0]


def _name(identifier: list) -> str:
    return _field(identifier, "name")[0]


class Unknown(Exception):
    """An expression whose value is not known before the program runs (a parameter, an unsupported function)."""


_OPERATORS = {"Plus": "+", "Minus": "-", "Times": "*", "Divide": "/", "IntDivide": "%/%", "Modulo": "%"}
_ARITHMETIC = {"Plus": operator.add, "Minus": operator.sub, "Times": operator.mul, "Divide": operator.truediv}
# Functions of data a size or bound may use, evaluated here on the data's arrays.
_FUNCTIONS: dict[str, Callable[[np.ndarray], Any]] = {  # Any: numpy's reductions are typed so
    "size": lambda v: np.shape(v)[0],
    "num_elements": np.size,
    "rows": lambda v: np.shape(v)[0],
    "cols": lambda v: np.shape(v)[1],
    "max": np.max,
    "min": np.min,
    "sum": np.sum,
}


def evaluate(node: list, env: dict):
    """The value of a stanc expression node over ``env`` (data, evaluated transformed data); Unknown otherwise."""
    e = _expr(node)
    if isinstance(e, str):  # every expression stanc writes is a (constructor args...) list; a bare atom is not one
        raise Unknown(text(node))
    head = e[0]
    if head == "IntNumeral":
        return int(e[1])
    if head == "RealNumeral":
        return float(e[1])
    if head == "Variable":
        if _name(e[1]) not in env:
            raise Unknown(_name(e[1]))
        return env[_name(e[1])]
    if head == "Paren":
        return evaluate(e[1], env)
    if head == "PrefixOp" and e[1] == "PMinus":
        return -evaluate(e[2], env)
    if head == "FunApp" and _name(e[2]) in _FUNCTIONS and len(e[3]) == 1:
        return np.asarray(_FUNCTIONS[_name(e[2])](np.asarray(evaluate(e[3][0], env)))).item()  # size() gives an int
    if head == "BinOp" and e[2] in _OPERATORS:
        a, b = evaluate(e[1], env), evaluate(e[3], env)
        if e[2] in ("IntDivide", "Modulo") or (e[2] == "Divide" and _integral(a) and _integral(b)):
            quotient = int(a / b)  # Stan's integer division truncates towards zero
            return quotient if e[2] != "Modulo" else a - b * quotient
        return _ARITHMETIC[e[2]](a, b)
    raise Unknown(text(node))


def _integral(value) -> bool:
    return np.issubdtype(np.asarray(value).dtype, np.integer)


def text(node: list) -> str:
    """A stanc expression node written back as Stan (the forms sizes and bounds use; others as '...')."""
    e = _expr(node)
    if isinstance(e, str):  # not an expression stanc writes (see evaluate)
        return "..."
    head = e[0]
    if head in ("IntNumeral", "RealNumeral"):
        return e[1]
    if head == "Variable":
        return _name(e[1])
    if head == "Paren":
        return f"({text(e[1])})"
    if head == "PrefixOp" and e[1] == "PMinus":
        return f"-{text(e[2])}"
    if head == "FunApp":
        return f"{_name(e[2])}({', '.join(text(arg) for arg in e[3])})"
    if head == "BinOp" and e[2] in _OPERATORS:
        return f"{text(e[1])} {_OPERATORS[e[2]]} {text(e[3])}"
    return "..."


# Stan's constrained types: stanc's transformation -> the type's name (its unconstraining transform).
_NAMED_TYPES = {
    "Simplex": "simplex",
    "Ordered": "ordered",
    "PositiveOrdered": "positive_ordered",
    "UnitVector": "unit_vector",
    "SumToZero": "sum_to_zero",
    "CholeskyCorr": "cholesky_factor_corr",
    "CholeskyCov": "cholesky_factor_cov",
    "Correlation": "corr_matrix",
    "Covariance": "cov_matrix",
    "StochasticColumn": "column_stochastic_matrix",
    "StochasticRow": "row_stochastic_matrix",
}


@dataclass(frozen=True)
class Declaration:
    """A variable of a Stan block as stanc parsed it: sized type and constraint (stanc syntax trees)."""

    name: str
    sized_type: Any
    transformation: Any

    def sizes(self) -> list:
        """The size expressions, outermost first (``array[N] vector[K]`` -> N, K)."""
        t = self.sized_type
        if isinstance(t, str):
            return []
        if t[0] == "SArray":
            return [t[2], *Declaration(self.name, t[1], self.transformation).sizes()]
        if t[0] in ("SVector", "SRowVector", "SMatrix"):
            return list(t[2:])
        raise Unknown(f"{t[0]} (tuples and complex types are not compared)")

    def shape(self, env: dict) -> tuple[int, ...] | None:
        """The shape on this data; None where a size is not known before the program runs."""
        try:
            return tuple(int(evaluate(size, env)) for size in self.sizes())
        except Unknown:
            return None

    def is_int(self) -> bool:
        t = self.sized_type
        while isinstance(t, list) and t[0] == "SArray":
            t = t[1]
        return t == "SInt"

    def constraint(self, env: dict) -> tuple:
        """(kind, bounds...): "real", "lower", "upper", "interval" (bounds evaluated, None where unknown) or a
        constrained type's name; with offset/multiplier "real" marked ``affine`` (its own unconstraining map)."""
        t = self.transformation
        if isinstance(t, str):
            return ("real",) if t == "Identity" else (_NAMED_TYPES.get(t, t),)
        kinds = {"Lower": "lower", "Upper": "upper", "LowerUpper": "interval"}
        if t[0] in kinds:
            return (kinds[t[0]], *(_maybe(evaluate, bound, env) for bound in t[1:]))
        if t[0] in ("Offset", "Multiplier", "OffsetMultiplier"):
            return ("real", "affine")
        return (t[0],)

    def text(self) -> str:
        """The declaration as Stan writes it, near enough for a message: ``vector<lower=0>[J]``."""
        t, dims = self.sized_type, []
        while isinstance(t, list) and t[0] == "SArray":
            dims.append(text(t[2]))
            t = t[1]
        base = t if isinstance(t, str) else t[0]
        name = {
            "SInt": "int",
            "SReal": "real",
            "SVector": "vector",
            "SRowVector": "row_vector",
            "SMatrix": "matrix",
        }.get(base, base)
        transformation, bounds = self.transformation, ""
        if isinstance(transformation, str) and transformation in _NAMED_TYPES:
            name = _NAMED_TYPES[transformation]
        elif isinstance(transformation, list):
            labels = {
                "Lower": ["lower"],
                "Upper": ["upper"],
                "LowerUpper": ["lower", "upper"],
                "Offset": ["offset"],
                "Multiplier": ["multiplier"],
                "OffsetMultiplier": ["offset", "multiplier"],
            }
            bounds = (
                "<"
                + ", ".join(
                    f"{label}={text(node)}"
                    for label, node in zip(labels.get(transformation[0], []), transformation[1:])
                )
                + ">"
            )
        sizes = f"[{', '.join(text(size) for size in t[2:])}]" if isinstance(t, list) else ""
        inner = f"{name}{bounds}{sizes}"
        return f"array[{', '.join(dims)}] {inner}" if dims else inner


def _maybe(function, *args):
    try:
        return function(*args)
    except Unknown:
        return None


@dataclass(frozen=True)
class StanProgram:
    """The declarations of a Stan program's data, transformed data and parameters blocks."""

    data: list[Declaration]
    transformed_data: dict[str, Any]  # name -> initial value's syntax tree, for variables never reassigned
    parameters: list[Declaration]

    def environment(self, data: dict) -> dict:
        """The data, and the transformed data whose values follow from them in the declarations alone."""
        env = dict(data)
        for name, initial in self.transformed_data.items():
            value = _maybe(evaluate, initial, env)
            if value is not None:
                env[name] = value
        return env


def _stanc_ast(stan_file: Path) -> list:
    """stanc's syntax tree of a program (the stanc httpstan bundles; the program has passed stanc already)."""
    returncode, out, err = stanc(stan_file, stan_file.read_text(), "--debug-ast")
    if returncode != 0:
        raise UsageError(f"{stan_file.name}: stanc failed: {' '.join(err.split())}")
    return _sexp(out)


def _block(ast: list, name: str) -> list:
    """The statements of a program block (none where the block is absent)."""
    block = _field(ast, name)[0]
    return [_field(statement, "stmt")[0] for statement in _field(block[0], "stmts")[0]] if block else []


def _declarations(statements: list) -> list[tuple[Declaration, Any]]:
    """The block's top-level declarations, each with its initial value's syntax tree (None without one)."""
    found = []
    for statement in statements:
        if statement[0] != "VarDecl":
            continue
        record = statement[1:]
        for variable in _field(record, "variables")[0]:
            initial = _field(variable, "initial_value")[0]
            found.append(
                (
                    Declaration(
                        _name(_field(variable, "identifier")[0]),
                        _field(record, "decl_type")[0],
                        _field(record, "transformation")[0],
                    ),
                    initial[0] if initial else None,
                )
            )
    return found


def _assigned(tree) -> set[str]:
    """Names assigned anywhere in a syntax tree (every lvalue is an ``LVariable``)."""
    if not isinstance(tree, list):
        return set()
    if tree and tree[0] == "LVariable":
        return {_name(tree[1])}
    return set().union(*(_assigned(item) for item in tree))


def read_program(stan_file: Path) -> StanProgram:
    ast = _stanc_ast(stan_file)
    transformed = _block(ast, "transformeddatablock")
    reassigned = _assigned(transformed)
    return StanProgram(
        data=[declaration for declaration, _ in _declarations(_block(ast, "datablock"))],
        transformed_data={
            d.name: initial
            for d, initial in _declarations(transformed)
            if initial is not None and d.name not in reassigned
        },
        parameters=[declaration for declaration, _ in _declarations(_block(ast, "parametersblock"))],
    )
