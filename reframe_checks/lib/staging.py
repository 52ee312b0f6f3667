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

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

from reframe_checks.lib.base import SuiteTest, ScratchCheck, figure, words
from reframe_checks.lib.parsers import ParseError
from reframe_checks.lib.targets import declared_targets, target_info

SCRIPTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "scripts")
STAGING_REPORT = "staging.json"
MIB = 1024.0 * 1024.0


def make_dataset(home, files, file_bytes, seed=2004):
    """Write ``files`` files of ``file_bytes`` seeded random bytes under home/input and
    the checksums the job must reproduce: input.sha256 and results.sha256 (the result
    of a file is its bytes swapped pairwise, what ``dd conv=swab`` writes)."""
    if file_bytes % 2:
        raise ValueError(f"file_bytes {file_bytes}: expected an even size (bytes are "
                         "swapped in pairs)")
    os.makedirs(os.path.join(home, "input"), exist_ok=False)
    inputs, results = [], []
    for i in range(files):
        name = f"f{i:06d}"
        data = random.Random(seed * 1_000_003 + i).randbytes(file_bytes)
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


def parse_staging_report(text):
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
    def single_task_in_the_batch_script(self):
        # Seed 004's job script stages with plain cp in the batch script: no launcher.
        self.layout(1, 1)
        self.job.launcher = getlauncher("local")()
        p = self.params
        self.workload_words = (f"{p['files']} files of {words(int(p['file_bytes']))} "
                               "staged in and back, checksums verified both ways")

    @run_before("run")
    def prepare_home_and_command(self):
        home = os.path.join(self.stagedir, "home")
        if not self.is_dry_run():
            make_dataset(home, int(self.params["files"]), int(self.params["file_bytes"]))
        self.executable_opts = ["stage.sh", f'"{self.scratch_path}"', f'"{home}"',
                                "1" if self.scratch_per_job else "0"]
        self.keep_files = [STAGING_REPORT]

    def staging_report(self):
        return self.parsed_output(STAGING_REPORT, parse_staging_report,
                                  "the job died before staging finished")

    @sanity_function
    def staged_and_verified(self):
        report = self.staging_report()
        if not report.get("ok"):
            raise sn.SanityError(f"staging failed: {report.get('error', 'no reason given')}")
        expected = int(self.params["files"])
        return sn.all([
            sn.assert_eq(report["files"], expected, msg="staged {0} files, expected {1}"),
            sn.assert_eq(report["checksums_in"], "verified"),
            sn.assert_eq(report["checksums_out"], "verified"),
            sn.assert_eq(report["bytes_in"], expected * int(self.params["file_bytes"]),
                         msg="staged {0} bytes, expected {1}"),
        ])

    def _rate(self, amount, seconds_key):
        seconds = self.staging_report()[seconds_key]
        return amount / seconds if seconds > 0 else float("inf")

    @figure("MiB/s", "Stage-in bandwidth (copy into scratch)",
            headline="Stage a data set into scratch", role="stage_in_bytes_per_s")
    def stage_in_bw(self):
        return self._rate(self.staging_report()["bytes_in"] / MIB, "stage_in_s")

    @figure("MiB/s", "Stage-out bandwidth (copy results home)",
            headline="Copy results home from scratch", role="stage_out_bytes_per_s")
    def stage_out_bw(self):
        return self._rate(self.staging_report()["bytes_out"] / MIB, "stage_out_s")

    @figure("files/s", "Files staged in per second", role="stage_in_files_per_s")
    def stage_in_files_rate(self):
        return self._rate(self.staging_report()["files"], "stage_in_s")

    @figure("files/s", "Files staged out per second", role="stage_out_files_per_s")
    def stage_out_files_rate(self):
        return self._rate(self.staging_report()["files"], "stage_out_s")


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
    def same_nodes_as_the_staging_job(self):
        info = target_info(self.current_partition, self.scratch_target)
        self.skip_because(not info.get("per_job"),
                          f"scratch target {self.scratch_target} is not a per-job directory: "
                          "the scheduler does not remove it, so there is nothing to confirm")
        parent = self.getdep(self.staging_test)
        if self.is_dry_run():
            self.scratch_dir = "<the staging job's per-job directory>"
        else:
            self.scratch_dir = parent.staging_report()["scratch_dir"]
        self.job.launcher = getlauncher("local")()
        if self.current_partition.scheduler.registered_name == "slurm":
            self.job.pin_nodes = list(parent.job.nodelist)
        self.executable_opts = [
            "-c", f"'if [ -e \"{self.scratch_dir}\" ]; then echo \"PRESENT {self.scratch_dir}\";"
                  f" ls -la \"{self.scratch_dir}\" | head -5; else echo \"REMOVED "
                  f"{self.scratch_dir}\"; fi'"]

    @sanity_function
    def directory_removed(self):
        return sn.assert_found(r"^REMOVED ", self.stdout,
                               msg=f"per-job scratch directory {self.scratch_dir} still exists "
                                   "after the job ended: the scheduler's clean-up did not run")
