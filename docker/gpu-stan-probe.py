"""One chain of a Stan program already compiled into httpstan's cache, in one forked process, as the runner forks
it: the program ``docker/gpu-stan-probe.sh`` runs under a debugger on a borrowed GPU box, where every bundled-Stan
chain died of a segmentation fault (2026-11-26, H200), for the native backtrace of that fault.

Usage: python3 docker/gpu-stan-probe.py [--module] MODEL_ID ISA  (the program compiled first, e.g. by
``python3 -m stanjax.runner.commands.compile --isa=ISA MODEL_ID``, so this process forks nothing but the chain);
with --module, only the path of the program's module is printed."""

import sys

from stanjax import models
from stanjax.runner.core.config import RunConfig
from stanjax.runner.engines.stan_bundled import HttpstanBackend, _run_chains, nuts_arguments


def main(model_id: str, isa: str, module_path_only: bool = False) -> int:
    import httpstan.cache
    import httpstan.models

    spec = models.get(model_id)
    name = httpstan.models.calculate_model_name(HttpstanBackend.program_code(spec.stan_file, isa))
    if name not in httpstan.cache.list_model_names():
        print(f"{model_id} is not compiled for {isa}: compile it first", file=sys.stderr)
        return 2
    if module_path_only:
        print(next(httpstan.cache.model_directory(name).glob("*.so")))
        return 0
    module = httpstan.models.import_services_extension_module(name)
    config = RunConfig(size="tiny", chains=1, warmup=100, draws=100)
    data = spec.data(config.size, config.data_seed())
    [output] = _run_chains(module, nuts_arguments(module, data, config, seed=1), chains=1)
    print(f"{model_id} ({isa}): one chain sampled, {len(output.text) + len(output.draws):,} bytes of output")
    return 0


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--module"]
    sys.exit(main(*arguments, module_path_only="--module" in sys.argv[1:]))
