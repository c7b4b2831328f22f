"""mkdocs hooks: the pages made from the code at build time, so they never drift from it: ``cli.md`` (every verb's
``--help``, from the parsers) and ``models/`` (one page per posterior of the registry: regime, sizes, references,
both programs)."""

from __future__ import annotations

import inspect

from mkdocs.structure.files import File, Files

from stanjax import models
from stanjax.runner.commands.cli import build_parser
from stanjax.runner.measure import references


def cli_page() -> str:
    parser = build_parser()
    verbs = next(action for action in parser._actions if action.__class__.__name__ == "_SubParsersAction")
    parts = [
        "# Every verb's options\n",
        "Generated from the parsers (`stanjax VERB --help` prints the same).\n",
        "```text",
        parser.format_help().rstrip(),
        "```\n",
    ]
    for name, sub in verbs.choices.items():
        parts += [f"## stanjax {name}\n", "```text", sub.format_help().rstrip(), "```\n"]
    return "\n".join(parts)


def model_page(spec: models.ModelSpec) -> str:
    module = inspect.getmodule(spec.generate)
    sizes = "\n".join(
        f"| {name} | {', '.join(f'{k} = {v:,}' for k, v in values.items()) or 'fixed data'} |"
        for name, values in spec.sizes.items()
    )
    reference_files = [
        f"`references/{spec.id}.{size}.json`" for size in spec.sizes if references.path(spec.id, size).exists()
    ]
    truth = ("an outside ground truth (the spec's `ground_truth`), " if spec.ground_truth else "") + (
        ", ".join(reference_files) or "none of ours"
    )
    if spec.reference_twin:
        truth = f"its non-centred twin's, `{spec.reference_twin}` (the spec's `reference_twin`)"
    return "\n".join(
        [
            f"# {spec.title or spec.id}\n",
            f"`{spec.id}`: {spec.description}\n",
            f"**Regime:** {spec.regime or 'not stated'}\n",
            (inspect.getdoc(module) or "") + "\n",
            "| size | sizes |\n|---|---|\n" + sizes + "\n",
            f"**References:** {truth}.\n",
            "**Parameters:** " + ", ".join(f"`{p.name}`" for p in spec.summarised) + "\n",
            f"## Stan: `stan/{spec.stan_file.name}`\n",
            "```stan",
            spec.stan_file.read_text().rstrip(),
            "```\n",
            f"## NumPyro: `jax_models/{spec.jax_file.name}`\n",
            "```python",
            spec.jax_file.read_text().rstrip(),
            "```\n",
        ]
    )


def on_files(files: Files, config) -> Files:
    specs = list(models.registry().values())
    files.append(File.generated(config, "cli.md", content=cli_page()))
    index = ["# The models\n", "| posterior | regime |", "|---|---|"]
    index += [f"| [{spec.title or spec.id}]({spec.id}.md) | {spec.regime} |" for spec in specs]
    files.append(File.generated(config, "models/index.md", content="\n".join(index) + "\n"))
    for spec in specs:
        files.append(File.generated(config, f"models/{spec.id}.md", content=model_page(spec)))
    return files
