"""Staging to the per-job scratch directory (seed 004), as a ReFrame check base.

The check makes a deterministic data set in a "home" directory (its stage directory,
on the shared file system as a home would be), and its job stages it into the scratch
target, computes there, stages the results back and verifies checksums both ways
(``scripts/stage.sh``).  For a per-job target (``$MYSANSCRATCH``) a second check runs
on the same nodes after the job and confirms the scheduler removed the directory.
"""

import hashlib
import json
import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

from reframe_checks.lib.base import SuiteTest, ScratchCheck, figure, on_slurm
from reframe_checks.lib.parsers import ParseError
from reframe_checks.lib.targets import declared_targets, target_info
from scratchbench.units import MIB, size_words

SCRIPTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")
STAGING_REPORT = "staging.json"


#: the three sets of the data set, workloads.yaml sizes each: many small files (a copy's
#: per-file cost shows), a burst of a few large files (a copy small enough for the page
#: cache to absorb: its bandwidth) and many large files (what a copy costs per byte past
#: the burst's volume, once the page cache has to write back)
SETS = {
    "small": ("small_files", "small_file_bytes"),
    "burst": ("burst_files", "file_bytes"),
    "large": ("files", "file_bytes"),
}
#: floors of the fitted costs: a cost the timings cannot see (below their noise) is
#: reported as this, a rate far above anything measured, rather than as infinite
MIN_SECONDS_PER_FILE = 1e-6
MIN_SECONDS_PER_BYTE = 1.0 / (100 * 1024.0**3)


def make_dataset(
    home: str | os.PathLike[str], sets: Mapping[str, tuple[int, int]], seed: int = 2004
) -> None:
    """Write each set {name: (files, file_bytes)} as seeded random files under
    home/input/<name>/ and the checksums the job must reproduce: input.sha256 and
    results.sha256 (the result of a file is its bytes swapped pairwise, what
    ``dd conv=swab`` writes)."""
    inputs, results = [], []
    for offset, (set_name, (files, file_bytes)) in enumerate(sorted(sets.items())):
        if file_bytes % 2:
            raise ValueError(
                f"{set_name} files of {file_bytes} bytes: expected an even size "
                "(bytes are swapped in pairs)"
            )
        os.makedirs(os.path.join(home, "input", set_name), exist_ok=False)
        for i in range(files):
            name = f"{set_name}/f{i:06d}"
            data = random.Random((seed + offset) * 1_000_003 + i).randbytes(file_bytes)
            with open(os.path.join(home, "input", name), "wb") as f:
                f.write(data)
            swapped = bytearray(file_bytes)
            swapped[0::2], swapped[1::2] = data[1::2], data[0::2]
            inputs.append(f"{hashlib.sha256(data).hexdigest()}  input/{name}\n")
            results.append(f"{hashlib.sha256(swapped).hexdigest()}  results/{name}\n")
    with open(os.path.join(home, "input.sha256"), "w") as f:
        f.writelines(inputs)
    with open(os.path.join(home, "results.sha256"), "w") as f:
        f.writelines(results)


def copy_costs(
    timings: Sequence[tuple[float, float, float]], start: float = 0.0
) -> tuple[float, float]:
    """(seconds per file, seconds per byte) of a copy, from [(files, bytes, seconds)]
    of sets of different shapes and what any copy costs before its first file
    (`start`, an empty copy timed the same way): the non-negative least-squares fit of
    seconds - start = files * per_file + bytes * per_byte.  Each cost is floored
    (MIN_SECONDS_PER_FILE, MIN_SECONDS_PER_BYTE): one the timings cannot see is tiny,
    not zero."""
    shapes = np.array([[float(f), float(b)] for f, b, _ in timings])
    seconds = np.array([max(0.0, float(t) - start) for _, _, t in timings])
    if len(timings) < 2 or abs(np.linalg.det(shapes.T @ shapes)) < 1e-12 * (shapes**2).sum() ** 2:
        raise ValueError(
            "the sets' shapes do not separate the per-file from the per-byte "
            "cost: expected sets of different file sizes"
        )
    fits = [np.linalg.lstsq(shapes, seconds, rcond=None)[0]]
    # Where the joint fit makes a cost negative, the best non-negative fit has that
    # cost at zero: fit the other alone, keep the better of the two.
    for keep in (0, 1):
        column = shapes[:, keep]
        alone = np.zeros(2)
        alone[keep] = max(0.0, float(column @ seconds / (column @ column)))
        fits.append(alone)
    feasible = [f for f in fits if (f >= 0).all()]
    best = min(feasible, key=lambda f: float(((shapes @ f - seconds) ** 2).sum()))
    return max(float(best[0]), MIN_SECONDS_PER_FILE), max(float(best[1]), MIN_SECONDS_PER_BYTE)


def copy_costs_by_volume(
    sets: Mapping[str, tuple[float, float, float]], start: float = 0.0
) -> tuple[float, float, float, float]:
    """(seconds per file, seconds per byte of the first bytes of a copy, how many bytes
    that is, seconds per byte past them), from the staging report's timings of one leg:
    {"small"|"burst"|"large": (files, bytes, seconds)}.  The small and burst sets, both
    small enough for the page cache to absorb, give the per-file and the first bytes'
    cost (copy_costs); the large set what its bytes past the burst's volume cost once
    the per-file and the first bytes' costs are taken out of its time."""
    per_file, per_byte_first = copy_costs([sets["burst"], sets["small"]], start)
    files, large_bytes, seconds = sets["large"]
    first_bytes = sets["burst"][1]
    if large_bytes <= first_bytes:
        raise ValueError(
            f"the large set ({large_bytes} bytes) is not larger than the burst "
            f"set ({first_bytes} bytes): expected burst_files < files"
        )
    beyond = (float(seconds) - start - files * per_file - first_bytes * per_byte_first) / (
        large_bytes - first_bytes
    )
    return per_file, per_byte_first, first_bytes, max(beyond, MIN_SECONDS_PER_BYTE)


def parse_staging_report(text: str) -> dict[str, Any]:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{STAGING_REPORT} is not valid JSON ({exc.msg})") from None


class StagingCheckBase(ScratchCheck):
    """Stage in, compute, stage out; checksums both ways; each leg timed."""

    workload_family = "staging"
    title = "Staging through the scratch directory (seed 004)"
    io_api = "cp"
    valid_prog_environs = ["+serial"]
    sourcesdir = SCRIPTS_DIR
    executable = "bash"

    @run_after("setup")
    def single_task_in_the_batch_script(self) -> None:
        # Seed 004's job script stages with plain cp in the batch script: no launcher.
        self.layout(1, 1)
        self.job.launcher = getlauncher("local")()
        self.workload_words = (
            " and ".join(
                f"{files} files of {size_words(size)}" for files, size in self.sets().values()
            )
            + " staged in and back, checksums verified both ways"
        )

    def sets(self) -> dict[str, tuple[int, int]]:
        """{set name: (files, file_bytes)} from workloads.yaml."""
        params = dict(self.params)
        # a site's own workloads file from before the burst set: an eighth of the files
        params.setdefault("burst_files", max(1, int(params.get("files", 8)) // 8))
        out = {}
        for name, (files_key, bytes_key) in SETS.items():
            try:
                out[name] = (int(params[files_key]), int(params[bytes_key]))
            except KeyError as exc:
                raise ValueError(
                    f"workloads file: staging.{self.workload_tag} has no "
                    f"{exc.args[0]}: expected a number (the {name} files' "
                    "set of the staged data set)"
                ) from None
        if not 0 < out["burst"][0] < out["large"][0]:
            raise ValueError(
                f"workloads file: staging.{self.workload_tag}: burst_files "
                f"{out['burst'][0]}: expected at least 1 and fewer than files "
                f"({out['large'][0]})"
            )
        return out

    @run_before("run")
    def prepare_home_and_command(self) -> None:
        home = os.path.join(self.stagedir, "home")
        if not self.is_dry_run():
            make_dataset(home, self.sets())
        self.executable_opts = [
            "stage.sh",
            f'"{self.scratch_path}"',
            f'"{home}"',
            "1" if self.scratch_per_job else "0",
        ]
        self.keep_files = [STAGING_REPORT]

    def staging_report(self) -> dict[str, Any]:
        return self.parsed_output(
            STAGING_REPORT, parse_staging_report, "the job died before staging finished"
        )

    @sanity_function
    def staged_and_verified(self) -> Any:
        report = self.staging_report()
        if not report.get("ok"):
            raise sn.SanityError(f"staging failed: {report.get('error', 'no reason given')}")
        sets = self.sets()
        return sn.all(
            [
                sn.assert_eq(
                    report["files"],
                    sum(f for f, _ in sets.values()),
                    msg="staged {0} files, expected {1}",
                ),
                sn.assert_eq(report["checksums_in"], "verified"),
                sn.assert_eq(report["checksums_out"], "verified"),
                sn.assert_eq(
                    report["bytes_in"],
                    sum(f * b for f, b in sets.values()),
                    msg="staged {0} bytes, expected {1}",
                ),
            ]
        )

    @run_before("performance")
    def record_phase_seconds(self) -> None:
        """A leg's figures rest on its whole copy; the ones fitted from the three sets'
        copies on the shortest of them."""
        if self.is_dry_run():
            return
        report = self.staging_report()
        for leg in ("in", "out"):
            shortest = min(s[f"stage_{leg}_s"] for s in report["sets"].values())
            self.phase_seconds = dict(
                self.phase_seconds,
                **{
                    f"stage_{leg}_bw": report[f"stage_{leg}_s"],
                    f"stage_{leg}_byte_bw": shortest,
                    f"stage_{leg}_burst_bw": shortest,
                    f"stage_{leg}_file_rate": shortest,
                },
            )

    def _rate(self, amount: float, seconds_key: str) -> float:
        seconds = self.staging_report()[seconds_key]
        return amount / seconds if seconds > 0 else float("inf")

    def _costs(self, leg: str) -> tuple[float, float, float, float]:
        """copy_costs_by_volume of one leg's copies (a fit of two points: cheap enough
        to repeat for each of the leg's figures)."""
        report = self.staging_report()
        return copy_costs_by_volume(
            {
                name: (s["files"], s["bytes"], s[f"stage_{leg}_s"])
                for name, s in report["sets"].items()
            },
            start=report["copy_start_s"][leg],
        )

    @figure(
        "MiB/s",
        "Stage-in bandwidth (copy into scratch, the whole data set)",
        headline="Stage a data set into scratch",
    )
    def stage_in_bw(self) -> float:
        return self._rate(self.staging_report()["bytes_in"] / MIB, "stage_in_s")

    @figure(
        "MiB/s",
        "Stage-out bandwidth (copy results home, the whole data set)",
        headline="Copy results home from scratch",
    )
    def stage_out_bw(self) -> float:
        return self._rate(self.staging_report()["bytes_out"] / MIB, "stage_out_s")

    # What a copy costs per file, per byte of its first burst-sized volume and per byte
    # past it, separated by the three sets' timings: the advisor predicts a job's
    # staging as files / file rate + the first bytes / their bandwidth + the rest /
    # the sustained bandwidth.
    @figure(
        "MiB/s",
        "Stage-in bandwidth past the burst's volume, per-file cost taken out",
        role="stage_in_bytes_per_s",
    )
    def stage_in_byte_bw(self) -> float:
        return 1.0 / self._costs("in")[3] / MIB

    @figure(
        "MiB/s",
        "Stage-out bandwidth past the burst's volume, per-file cost taken out",
        role="stage_out_bytes_per_s",
    )
    def stage_out_byte_bw(self) -> float:
        return 1.0 / self._costs("out")[3] / MIB

    @figure(
        "MiB/s",
        "Stage-in bandwidth of a burst (a copy the page cache absorbs), per-file cost taken out",
        role="stage_in_first_bytes_per_s",
    )
    def stage_in_burst_bw(self) -> float:
        return 1.0 / self._costs("in")[1] / MIB

    @figure(
        "MiB/s",
        "Stage-out bandwidth of a burst (a copy the page cache absorbs), per-file cost taken out",
        role="stage_out_first_bytes_per_s",
    )
    def stage_out_burst_bw(self) -> float:
        return 1.0 / self._costs("out")[1] / MIB

    @figure(
        "MiB",
        "Size of the burst: the copy the burst bandwidths were measured on",
        role="stage_first_bytes",
    )
    def stage_burst_size(self) -> float:
        return self._costs("in")[2] / MIB

    @figure(
        "MiB",
        "Size of the largest copy timed (the large set): the sustained "
        "bandwidths are measured up to it",
        role="stage_largest_bytes",
    )
    def stage_largest_copy(self) -> float:
        return self.staging_report()["sets"]["large"]["bytes"] / MIB

    @figure(
        "files/s",
        "Files staged in per second, their bytes' time taken out",
        role="stage_in_files_per_s",
    )
    def stage_in_file_rate(self) -> float:
        return 1.0 / self._costs("in")[0]

    @figure(
        "files/s",
        "Files staged out per second, their bytes' time taken out",
        role="stage_out_files_per_s",
    )
    def stage_out_file_rate(self) -> float:
        return 1.0 / self._costs("out")[0]


class ScratchRemovedCheckBase(rfm.RunOnlyRegressionTest, SuiteTest):
    """After a staging job, on the same nodes: is the per-job directory gone?

    One variant per scratch target; a target that is not a per-job directory is skipped
    with that reason.  Subclasses set ``staging_test`` (the name of the staging variant
    of the same target) in an init hook.  The new job cannot start on a node before the
    previous job's epilog has finished there, so the answer reflects the scheduler's
    clean-up, not a race with it.
    """

    scratch_target = parameter(declared_targets())
    #: the staging variant of the same target (set by subclasses for per-job targets)
    staging_test = variable(str, value="")
    valid_prog_environs = ["+serial"]
    exclusive_access = True
    executable = "bash"
    num_tasks = 1

    @run_after("setup")
    def same_nodes_as_the_staging_job(self) -> None:
        info = target_info(self.current_partition, self.scratch_target)
        self.skip_because(
            not info.get("per_job"),
            f"scratch target {self.scratch_target} is not a per-job directory: "
            "the scheduler does not remove it, so there is nothing to confirm",
        )
        parent = self.getdep(self.staging_test)
        if self.is_dry_run():
            self.scratch_dir = "<the staging job's per-job directory>"
        else:
            self.scratch_dir = parent.staging_report()["scratch_dir"]
        self.job.launcher = getlauncher("local")()
        if on_slurm(self.current_partition):
            self.job.pin_nodes = list(parent.job.nodelist)
        self.executable_opts = [
            "-c",
            f'\'if [ -e "{self.scratch_dir}" ]; then echo "PRESENT {self.scratch_dir}";'
            f' ls -la "{self.scratch_dir}" | head -5; else echo "REMOVED '
            f"{self.scratch_dir}\"; fi'",
        ]

    @sanity_function
    def directory_removed(self) -> Any:
        return sn.assert_found(
            r"^REMOVED ",
            self.stdout,
            msg=f"per-job scratch directory {self.scratch_dir} still exists "
            "after the job ended: the scheduler's clean-up did not run",
        )
