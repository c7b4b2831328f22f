"""A small reader of Stan declarations, for tests: names and shapes declared in a program's block."""

import re

from stanjax.models import size_value

BLOCK_RE = r"(?m)^\s*{name}\s*\{{(.*?)^\s*\}}"


def _block(code: str, name: str) -> str:
    code = re.sub(r"//[^\n]*", "", code)
    match = re.search(BLOCK_RE.format(name=name), code, flags=re.S)
    return match.group(1) if match else ""


def _dims(text: str, data: dict) -> tuple[int, ...]:
    return tuple(size_value(d.strip(), data) for d in text.split(",") if d.strip())


def declarations(code: str, block: str, data: dict) -> dict[str, tuple[int, ...]]:
    """{name: shape} for every declaration in ``block``; sizes are looked up in ``data``."""
    out = {}
    for statement in _block(code, block).split(";"):
        statement = re.sub(r"<[^>]*>", "", statement).strip()  # drop constraints
        if not statement:
            continue
        statement = re.sub(r"\s*=.*$", "", statement, flags=re.S)  # drop a definition
        shape: tuple[int, ...] = ()
        array = re.match(r"array\s*\[([^\]]*)\]\s*(.*)", statement, flags=re.S)
        if array:
            shape, statement = _dims(array.group(1), data), array.group(2)
        kind = re.match(r"(\w+)\s*(?:\[([^\]]*)\])?\s+(\w+)$", statement.strip(), flags=re.S)
        assert kind, f"cannot read Stan declaration: {statement!r}"
        if kind.group(2):
            shape = shape + _dims(kind.group(2), data)
        out[kind.group(3)] = shape
    return out
