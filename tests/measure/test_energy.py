"""Energy and memory of a run (runner.measure.energy): fake power sources with known answers, RAPL read from a fake
powercap folder, this machine's missing sensors recorded as missing (never 0 J), the record round trip and the
report's ESS per joule. No sampler runs."""

import json
import os
import re
import subprocess
import sys
import time

import pandas as pd
import pynvml
import pytest
from msgspec.structs import replace

from stanjax.models import ROOT
from stanjax.reports.build import build
from stanjax.reports.numbers import number
from stanjax.reports.runs_table import energy_columns
from stanjax.runner.core import records
from stanjax.runner.core.run_measures import RunEnergy, SourceEnergy
from stanjax.runner.measure import energy
from stanjax.runner.measure.energy import Meter, Rapl, Reading, SensorError

FIXTURE = ROOT / "tests" / "fixtures" / "tiny_repeats2.jsonl"
FAST = 0.005  # the meter's interval in these tests: many readings in a short span


class ConstantPower:
    """A GPU drawing ``watts`` all the time, with ``memory_mib`` in use."""

    wrap_j = None

    def __init__(self, watts: float, memory_mib: float | None = None, name: str = "gpu0"):
        self.name, self.watts, self.memory_mib = name, watts, memory_mib

    def read(self) -> Reading:
        return Reading(watts=self.watts, memory_mib=self.memory_mib)


class ScriptedCounter:
    """A cumulative counter giving ``values`` (J) in turn, then its last one for ever."""

    def __init__(self, values: list[float], wrap_j: float | None, name: str = "cpu-package-0"):
        self.name, self.values, self.wrap_j = name, list(values), wrap_j

    def read(self) -> Reading:
        return Reading(energy_j=self.values.pop(0) if len(self.values) > 1 else self.values[0])


class Broken:
    """A sensor that works for ``good`` readings, then fails."""

    name, wrap_j = "gpu1", None

    def __init__(self, good: int):
        self.good = good

    def read(self) -> Reading:
        if self.good <= 0:
            raise SensorError("sensor gone")
        self.good -= 1
        return Reading(watts=300.0)


def metered(sources, seconds: float = 0.3) -> RunEnergy:
    with Meter("test span", sources, interval_s=FAST) as meter:
        time.sleep(seconds)
    return meter.result


def test_constant_power_gives_watts_times_seconds():
    result = metered([ConstantPower(50.0, memory_mib=1234.0)])
    gpu = result.sources["gpu0"]
    assert result.span == "test span" and result.wall_s == pytest.approx(0.3, abs=0.1)
    assert gpu.joules == pytest.approx(50 * result.wall_s, rel=0.02)
    assert gpu.mean_watts == pytest.approx(50, rel=0.02)
    assert gpu.samples > 10 and not gpu.missing and gpu.peak_memory_mib == 1234.0
    assert result.peak_host_memory_mib > 10  # this Python process: tens of MiB at least


@pytest.mark.parametrize(
    "values, wrap_j, joules",
    [
        ([90.0, 95.0, 3.0, 8.0], 100.0, 18.0),  # 5, then a wrap at 100 (5 + 3), then 5
        ([10.0, 12.5], None, 2.5),  # no wrap: the range need not be known
    ],
)
def test_a_cumulative_counter_sums_its_increments_across_a_wrap(values, wrap_j, joules):
    result = metered([ScriptedCounter(values, wrap_j)], seconds=0.1)
    package = result.sources["cpu-package-0"]
    assert package.joules == pytest.approx(joules) and not package.missing
    assert package.mean_watts == pytest.approx(joules / result.wall_s)


def test_a_counter_that_goes_back_with_no_known_range_is_missing_not_negative():
    package = metered([ScriptedCounter([90.0, 3.0], None)], seconds=0.05).sources["cpu-package-0"]
    assert package.joules is None and package.mean_watts is None
    assert package.missing == "energy counter went backwards and its range is unknown"


@pytest.mark.parametrize("good", [0, 3])  # unreadable from the start; failing mid-span
def test_a_source_that_cannot_be_read_is_missing_with_its_reason_never_zero(good):
    result = metered([Broken(good), ConstantPower(50.0)], seconds=0.1)
    broken = result.sources["gpu1"]
    assert broken == SourceEnergy(joules=None, mean_watts=None, samples=good, missing="sensor gone")
    assert result.sources["gpu0"].joules == pytest.approx(50 * result.wall_s, rel=0.05)  # the others still count


def test_this_machines_missing_sensors_are_missing_with_a_reason():
    """Every real source either measured or says why not; on a machine without NVML or powercap (this project's
    CPU machine), both say so."""
    sources = metered(None, seconds=0.05).sources
    for name, source in sources.items():
        assert (source.joules is None) == bool(source.missing), name
        assert source.joules is None or source.joules >= 0
    if not energy.POWERCAP.exists():
        assert sources["cpu-package"].missing == "no /sys/class/powercap"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        assert sources["gpu"].missing == f"no NVML: {err}"


def write_atomic(path, text: str) -> None:
    """As the kernel's file does: a reader sees the old value or the new, never half of one."""
    (path.parent / "new").write_text(text)
    os.replace(path.parent / "new", path)


@pytest.fixture
def powercap(tmp_path):
    """A powercap folder as Linux lays it out: a package domain, its core subdomain, a psys domain."""
    for zone, name in (("intel-rapl:0", "package-0"), ("intel-rapl:0:0", "core"), ("intel-rapl:1", "psys")):
        (tmp_path / zone).mkdir()
        (tmp_path / zone / "name").write_text(name + "\n")
        (tmp_path / zone / "energy_uj").write_text("4000000\n")
        (tmp_path / zone / "max_energy_range_uj").write_text("5000000\n")
    return tmp_path


def test_rapl_reads_package_domains_and_their_wrap(powercap):
    [package] = Rapl.discover(powercap)
    assert package.name == "cpu-package-0" and package.wrap_j == 5.0 and package.read() == Reading(energy_j=4.0)
    energy_uj = powercap / "intel-rapl:0" / "energy_uj"
    with Meter("test span", [package], interval_s=FAST) as meter:
        time.sleep(0.05)
        write_atomic(energy_uj, "4500000\n")
        time.sleep(0.05)
        write_atomic(energy_uj, "1000000\n")  # wrapped at 5 J: 1.5 J more
        time.sleep(0.05)
    assert meter.result.sources["cpu-package-0"].joules == pytest.approx(2.0)


def test_rapl_without_powercap_or_a_package_domain_says_so(tmp_path):
    assert Rapl.discover(tmp_path / "absent")[0].name == "cpu-package"
    with pytest.raises(SensorError, match=f"no {tmp_path / 'absent'}"):
        Rapl.discover(tmp_path / "absent")[0].read()
    with pytest.raises(SensorError, match="no RAPL package domain"):
        Rapl.discover(tmp_path)[0].read()


@pytest.mark.parametrize(
    "how, reason",
    [
        ("removed", "No such file or directory"),
        ("chmod 000", "Permission denied"),  # Linux 5.10 and later, for everyone but root
    ],
)
def test_unreadable_energy_uj_is_missing_with_the_reason(powercap, how, reason):
    energy_uj = powercap / "intel-rapl:0" / "energy_uj"
    if how == "removed":
        energy_uj.unlink()
    else:
        if os.geteuid() == 0:
            pytest.skip("root reads a file of mode 000")
        energy_uj.chmod(0)
    package = metered(Rapl.discover(powercap), seconds=0.02).sources["cpu-package-0"]
    assert package.joules is None and package.missing == f"energy_uj not readable: {reason}"


ENERGY = RunEnergy(
    span="test span",
    wall_s=2.0,
    peak_host_memory_mib=512.0,
    sources={
        "gpu0": SourceEnergy(joules=100.0, mean_watts=50.0, samples=21, peak_memory_mib=2048.0),
        "cpu-package-0": SourceEnergy(joules=50.0, mean_watts=25.0, samples=21),
        "cpu-package-1": SourceEnergy(
            joules=None, mean_watts=None, samples=0, missing="energy_uj not readable: Permission denied"
        ),
    },
)


def test_a_record_with_energy_round_trips_and_one_without_reads_as_not_measured(tmp_path):
    old = records.read(FIXTURE)[0]
    assert old.energy is None and old.core_ids is None
    path = tmp_path / "results.jsonl"
    records.append(path, replace(old, energy=ENERGY, core_ids=[1]))
    records.append(path, old)
    assert records.read(path) == [replace(old, energy=ENERGY, core_ids=[1]), old]


def test_the_report_shows_ess_per_joule_where_measured_and_not_measured_elsewhere(tmp_path):
    runs = records.read(FIXTURE)
    index = next(i for i, r in enumerate(runs) if r.valid)
    runs[index] = replace(runs[index], energy=ENERGY)
    results = tmp_path / "results"
    results.mkdir()
    (results / "runs.jsonl").write_text("".join(json.dumps(records.to_builtins(r)) + "\n" for r in runs))
    build(results, tmp_path / "report")
    # the run tables are on the models' pages
    html = "".join(page.read_text() for page in sorted((tmp_path / "report" / "models").glob("*.html")))
    # A CPU run is charged its CPU packages' joules, not the idle GPU beside it (a GPU run: both; see below)
    assert runs[index].device == "cpu"
    expected = number(runs[index].metrics.min_ess_bulk / 50.0)
    cells = re.findall(r'<td class="ess-per-joule">(.*?)</td>', html, re.S)
    measured = [cell for cell in cells if cell != "not measured"]
    # One run and the summary row of its repeats (the median over those that measured it)
    assert measured == [expected, f'{expected}<br><span class="small">cpu-package-0</span>']
    assert len(cells) > 2 * len(measured)
    markdown = (tmp_path / "report" / "README.md").read_text()
    assert f"| {expected} |" in markdown and "| not measured |" in markdown
    csv = pd.read_csv(tmp_path / "report" / "runs.csv.gz")
    assert csv.joules.notna().sum() == 1 and csv.joules.max() == 50.0 and csv.peak_gpu_memory_mib.max() == 2048.0


def test_a_gpu_run_is_charged_its_gpus_and_cpu_packages_and_a_counter_that_did_not_tick_is_not_a_cost():
    assert energy_columns(ENERGY, "gpu")["joules"] == 150.0
    assert energy_columns(ENERGY, "gpu")["energy_sources"] == "gpu0 + cpu-package-0"
    assert energy_columns(ENERGY, "cpu")["joules"] == 50.0
    still = replace(ENERGY, sources={"gpu0": SourceEnergy(joules=0.0, mean_watts=0.0, samples=3)})
    assert energy_columns(still, "gpu")["joules"] is None and energy_columns(None, "gpu")["joules"] is None


def test_pin_to_cores_takes_the_cores_from_the_first_core_on():
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2:
        pytest.skip("needs two usable cores")
    code = "import json; from stanjax.runner.measure.worker import pin_to_cores; print(json.dumps(pin_to_cores(1, first_core=1)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == [usable[1]]
    assert sorted(os.sched_getaffinity(0)) == usable  # this process kept its own


def test_pin_to_cores_pins_the_threads_already_running():
    """Threads started before the pin (OpenBLAS's pool, started at numpy's import) run on the job's cores too,
    not on every core."""
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2:
        pytest.skip("needs two usable cores")
    code = (
        "import json, os, threading; from stanjax.runner.measure.worker import pin_to_cores\n"
        "go = threading.Event(); waiting = threading.Thread(target=go.wait); waiting.start()\n"
        "pinned = pin_to_cores(1, first_core=1)\n"
        "masks = {t: sorted(os.sched_getaffinity(int(t))) for t in os.listdir('/proc/self/task')}\n"
        "go.set(); waiting.join(); print(json.dumps([pinned, masks[str(waiting.native_id)], len(masks)]))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    pinned, started_before, threads = json.loads(out.stdout.splitlines()[-1])
    assert pinned == started_before == [usable[1]] and threads >= 2
