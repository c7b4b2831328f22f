"""Python literals for outside text: the spec files ``stanjax check`` and ``stanjax import`` write are imported
later, so every text in them that came from a file, a name or a path (a data path, a posteriordb keyword) enters
as a literal whose value is exactly that text, and nothing in it can end the literal and go on as code."""

from __future__ import annotations


def string(text: str) -> str:
    """A one-line string literal of ``text``: repr's escapes, in double quotes where the text has none (as ruff
    formats a spec file)."""
    literal = repr(str(text))
    if literal.startswith("'") and '"' not in text:  # repr escaped no quote: the body holds none
        return f'"{literal[1:-1]}"'
    return literal


def docstring(text: str) -> str:
    """A triple-quoted literal of ``text``, line breaks kept: backslashes and double quotes escaped, so no quote
    in the text can close it, and any other character that is not printable written as repr escapes it."""
    body = "".join(
        "\\" + char if char in '\\"' else char if char == "\n" or char.isprintable() else repr(char)[1:-1]
        for char in str(text)
    )
    return f'"""{body}"""'
