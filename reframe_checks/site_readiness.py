"""A site's first hour: is the site config ready for the suite?

`scratchbench check-site SITE` runs these checks (tag ``site``; never part of a suite
run), each a tiny exclusive job through the site's own scheduler, so the scheduler
answering and a job starting are shown by every one of them:

* :class:`TargetReady`, per scratch target and MPI environment: the target's path is
  writable from a job (a 1 MiB file is written and removed) and how much room it has;
* :class:`MPIReady`, per MPI environment: its modules load, its MPI compiler builds the
  kernel, and the kernel runs with two ranks that see each other;
* :class:`ToolReady`, per MPI environment: IOR and mdtest come the way the environment
  says (``extras['ior']``, see reframe_checks/lib/tools.py).

Each case says what it found (``found``) or fails with the cause and the fix.
"""

import os
import re

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)

from reframe_checks.lib.base import SuiteTest
from reframe_checks.lib.kernel import KERNEL_REPORT, KernelBuild
from reframe_checks.lib.parsers import ParseError, kernel_problems, parse_kernel_json
from reframe_checks.lib.targets import declared_targets, target_info
from reframe_checks.lib.tools import IORProvider
from scratchbench.units import size_words

PROBE_BYTES = 1024 * 1024


class SiteReadiness(rfm.RunOnlyRegressionTest, SuiteTest):
    """One tiny exclusive job; ``found`` says what it found, in words."""

    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    exclusive_access = True
    time_limit = "5m"
    num_tasks = 1
    maintainers = ["scratchbench"]
    found = variable(str, value="")

    @run_after("init")
    def only_for_check_site(self):
        self.tags = {"site"}

    def job_text(self, name):
        try:
            with open(os.path.join(self.stagedir, name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def last_error_line(self):
        lines = [
            ln.strip() for ln in self.job_text(self.stderr.evaluate()).splitlines() if ln.strip()
        ]
        return lines[-1] if lines else "nothing on stderr"


@rfm.simple_test
class TargetReady(SiteReadiness):
    """The scratch target's path, as a job sees it, takes a file; its free room."""

    scratch_target = parameter(declared_targets())
    scratch_path = variable(str, value="")
    free_bytes = variable(int, value=-1)
    executable = "echo"
    executable_opts = ["probe finished"]

    @run_after("init")
    def on_the_partitions_of_the_target(self):
        self.valid_systems = [f"+scratch_{self.scratch_target}"]
        self.descr = f"scratch target {self.scratch_target} is writable from a job"

    @run_after("setup")
    def probe_the_path(self):
        self.scratch_path = target_info(self.current_partition, self.scratch_target)["path"]
        # the job's shell expands a template path ($MYSANSCRATCH, /scratch/$USER)
        self.prerun_cmds = [
            f'sb_dir=$(mktemp -d "{self.scratch_path}/sbcheck.XXXXXX") && '
            f'head -c {PROBE_BYTES} /dev/zero > "$sb_dir/probe" && '
            'echo "writable $(df -Pk "$sb_dir" | awk \'NR == 2 {print $4}\')"; '
            '[ -n "$sb_dir" ] && rm -rf -- "$sb_dir"'
        ]

    @sanity_function
    def writable(self):
        match = re.search(r"^writable (\d+)$", self.job_text(self.stdout.evaluate()), re.M)
        if not match:
            raise sn.SanityError(
                f"scratch target {self.scratch_target} ({self.scratch_path}) is not writable "
                f"from a job on {self.current_partition.fullname}: {self.last_error_line()}; "
                "fix: make the directory exist and be writable by this user on the compute "
                "nodes, or correct its path in the site config"
            )
        self.free_bytes = int(match.group(1)) * 1024
        self.found = (
            f"{self.scratch_path} is writable from a job, {size_words(self.free_bytes)} free"
        )
        return True


@rfm.simple_test
class MPIReady(SiteReadiness):
    """The environment's modules load, its MPI builds the kernel, two ranks run it."""

    kernel = fixture(KernelBuild, scope="environment")
    num_tasks = 2
    descr = "the environment's MPI builds the kernel and runs two ranks"

    @run_before("run")
    def two_ranks_of_the_kernel(self):
        self.executable = self.kernel.binary
        self.executable_opts = [
            "iotest",
            "--dir",
            self.stagedir,
            "--output",
            KERNEL_REPORT,
            "--nr",
            "1024",
            "--nc",
            "1",
            "--niter",
            "1",
            "--reps",
            "1",
            "--layout",
            "fpp",
            "--api",
            "posix",
        ]

    @sanity_function
    def two_ranks_ran(self):
        try:
            report = parse_kernel_json(self.job_text(KERNEL_REPORT), source=KERNEL_REPORT)
        except ParseError as exc:
            raise sn.SanityError(
                f"the kernel did not run with two ranks ({exc}; job stderr: "
                f"{self.last_error_line()}); fix: the environment's MPI "
                "launcher and its srun MPI plugin (SLURM_MPI_TYPE)"
            ) from None
        problems = kernel_problems(report, expected_ranks=2)
        if problems:
            raise sn.SanityError(
                f"the kernel ran, but: {'; '.join(problems)}; fix: the "
                "launcher's MPI plugin (SLURM_MPI_TYPE) for this MPI"
            )
        self.found = f"modules load, {self.current_environ.cc} builds the kernel, 2 ranks ran it"
        return True


@rfm.simple_test
class ToolReady(SiteReadiness):
    """IOR and mdtest come the way the environment says."""

    tool = fixture(IORProvider, scope="environment")
    executable = "echo"
    executable_opts = ["tools found"]
    descr = "IOR and mdtest are provided as the environment says"

    @run_after("setup")
    def load_the_tool(self):
        self.modules = list(self.tool.modules_needed)

    @run_before("run")
    def look_for_the_tools(self):
        self.prerun_cmds = list(self.tool.load_cmds) + ["command -v ior", "command -v mdtest"]

    @sanity_function
    def tools_found(self):
        out = self.job_text(self.stdout.evaluate())
        if not re.search(r"/mdtest$", out, re.M) or not re.search(r"/ior$", out, re.M):
            raise sn.SanityError(
                f"IOR/mdtest ({self.tool.source}) not found in a job: "
                f"{self.last_error_line()}; fix: the route in extras 'ior'"
            )
        self.found = f"ior and mdtest from {self.tool.source}, built with {self.tool.tool_mpi}"
        return True
