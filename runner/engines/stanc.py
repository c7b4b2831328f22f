"""stanc, Stan's translator to C++ (the binary httpstan ships): checks of a program without a C++ compile, and the
bundled Stan's builds translated with options httpstan itself never passes (``--O1``, stanc's optimiser)."""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import os
import subprocess
import tempfile
from pathlib import Path

# httpstan gives stanc one second (httpstan/compile.py): beside other work on two cores it can need more, and
# httpstan answers 500 (a timeout in its first stanc call) or 400 naming TimeoutExpired (in its second): the bundled
# Stan's build tries that often.
STANC_TRIES = 3

# httpstan's own stanc arguments (httpstan/compile.py), which a build with options keeps.
HTTPSTAN_STANC_ARGS = ("--warn-pedantic", "--print-cpp")


@functools.lru_cache(maxsize=512)
def stanc(stan_file: Path, text: str, *options: str) -> tuple[int, str, str]:
    """stanc (httpstan's) run on a program with ``options``, no C++ written: its exit code, output and errors.
    Once a process per file and text (``text``: the key, what the file held when asked): a campaign's plan checks
    every model's programs, and a test process plans many times (26 models: 2.7 of 3.6 s were stanc's). A minute
    to answer, not httpstan's one second, which two cores busy with other work can miss."""
    with importlib.resources.as_file(importlib.resources.files("httpstan") / "stanc") as binary:
        # --o: stanc would write the C++ beside the program otherwise
        done = subprocess.run(
            [str(binary), *options, f"--o={os.devnull}", str(stan_file)], capture_output=True, text=True, timeout=60
        )
    return done.returncode, done.stdout, done.stderr


def stanc_timed_out(status: int, message: str) -> bool:
    """Whether httpstan's answer to a build is its stanc's timeout (``STANC_TRIES``)."""
    return status == 500 or "TimeoutExpired" in message


def translate(program_code: str, stan_model_name: str, options: tuple[str, ...] = ()) -> tuple[str, str]:
    """A program's C++ and stanc's warnings, translated as httpstan translates it (its arguments, the model named
    ``stan_model_name``) with ``options`` added; a ValueError with stanc's message where it does not translate, as
    httpstan's own ``compile`` raises."""
    with importlib.resources.as_file(importlib.resources.files("httpstan") / "stanc") as binary:
        with tempfile.TemporaryDirectory(prefix="httpstan_") as folder:
            path = Path(folder) / f"{stan_model_name}.stan"
            path.write_text(program_code)
            done = subprocess.run(
                [str(binary), "--name", stan_model_name, *HTTPSTAN_STANC_ARGS, *options, str(path)],
                capture_output=True,
                timeout=60,
            )
    if done.returncode != 0:
        raise ValueError(done.stderr.decode().strip())
    return done.stdout.decode().strip(), done.stderr.decode().strip()


@contextlib.contextmanager
def translated_with(options: tuple[str, ...]):
    """httpstan's builds meanwhile translate with stanc's ``options`` too (e.g. ``--O1``): its one call to stanc,
    ``httpstan.compile.compile``, is replaced by the same call with the options added. No options: unchanged."""
    if not options:
        yield
        return
    import httpstan.compile

    before = httpstan.compile.compile
    httpstan.compile.compile = functools.partial(translate, options=options)
    try:
        yield
    finally:
        httpstan.compile.compile = before
