"""httpstan's wheel without what only compiling a model needs (Stan's C++ headers, 19 MB packed, and the prebuilt
``stan_services.o``, 7 MB), for a borrowed GPU box: it samples with modules built on the project's machine and
carried in .gpu-stan/ (programs it compiled itself died there: docs/gpu.md), so the 35 MB wheel shrinks to ~9 MB and
the checkout plus ``make gpu-carry``'s wheels fit the device's 64 MiB. The wheel's RECORD drops the removed
files' lines; stanc stays (the plan's static checks parse every program), and so does Stan's version header.

    python docker/slim-httpstan.py .gpu-carry/httpstan-*.whl     # rewritten in place (make gpu-carry)
"""

import sys
import zipfile
from pathlib import Path

LEFT_OUT = ("httpstan/include/", "httpstan/stan_services.o")
KEPT = ("httpstan/include/stan/version.hpp",)  # the Stan version every record states (engines/stan_bundled.py)


def left_out(name: str) -> bool:
    return name.startswith(LEFT_OUT) and name not in KEPT


def slim(wheel: Path) -> tuple[int, int]:
    """The wheel rewritten without LEFT_OUT; its size before and after."""
    before = wheel.stat().st_size
    slimmed = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as old, zipfile.ZipFile(slimmed, "w", zipfile.ZIP_DEFLATED) as new:
        for info in old.infolist():
            if left_out(info.filename):
                continue
            data = old.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines(keepends=True)
                data = "".join(line for line in lines if not left_out(line.split(",", 1)[0])).encode()
            new.writestr(info, data)
    slimmed.replace(wheel)
    return before, wheel.stat().st_size


if __name__ == "__main__":
    for path in sys.argv[1:]:
        size = slim(Path(path))
        print(f"{Path(path).name}: {size[0] / 2**20:.1f} MB -> {size[1] / 2**20:.1f} MB")
