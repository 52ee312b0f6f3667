"""IOR and mdtest as ReFrame checks: where the tool comes from, how it runs, what it yields.

Where IOR (with mdtest, which modern Spack builds as part of the ``ior`` package) comes
from is the environment's business, said in its ``extras['ior']`` in the site config:

* ``"spack"``        build from the repository's ``spack.yaml`` with ReFrame's Spack build
                     system (one build per partition and environment; ``spack.lock`` is
                     kept with the run);
* ``"module:NAME"``  load the Lmod/Tcl module NAME;
* absent             use ``ior``/``mdtest`` found on PATH.

When none of these provides the tool, the :class:`IORProvider` fixture is skipped with
the reason, and so are the checks that need it: visible, never a silent pass.
"""

import os
import shutil

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, parameter, run_after, run_before,
                                   sanity_function, variable)

from scratchbench import paths
from reframe_checks.lib.base import SuiteTest, ScratchCheck, figure
from reframe_checks.lib.parsers import ior_problems, parse_ior_json, parse_mdtest

IOR_REPORT = "ior.json"
SPACK_ENV = "spack_env"


class IORProvider(rfm.CompileOnlyRegressionTest, SuiteTest):
    """Makes ior and mdtest available, or skips with the reason."""

    descr = "provide IOR and mdtest (Spack build, module or PATH)"
    build_locally = True
    source = variable(str, value="path")
    #: commands a dependent check runs before the tool (module loads, spack load)
    load_cmds = variable(list, value=[])
    modules_needed = variable(list, value=[])

    @run_after("setup")
    def choose_source(self):
        self.source = str(self.current_environ.extras.get("ior", "path"))
        if self.source == "spack":
            self.skip_because(shutil.which("spack") is None,
                         "IOR: the environment asks for a Spack build but 'spack' is not on "
                         "PATH")
            self.build_system = "Spack"
            self.build_system.environment = SPACK_ENV
            self.keep_files = [os.path.join(SPACK_ENV, "spack.lock")]
        elif self.source.startswith("module:"):
            self.modules_needed = [self.source.split(":", 1)[1]]
            self.build_system = "CustomBuild"
            self.build_system.commands = ["command -v ior && command -v mdtest"]
            self.modules = self.modules_needed
        else:
            missing = [t for t in ("ior", "mdtest") if shutil.which(t) is None]
            self.skip_because(bool(missing),
                         f"IOR/mdtest not available: {' and '.join(missing)} not on PATH, no "
                         "module or Spack build configured for this environment (set "
                         "extras {'ior': 'spack'} or {'ior': 'module:NAME'} in the site "
                         "config; see spack.yaml)")
            self.build_system = "CustomBuild"
            self.build_system.commands = ["command -v ior && command -v mdtest"]

    @run_before("compile")
    def copy_spack_environment(self):
        if self.source == "spack":
            os.makedirs(os.path.join(self.stagedir, SPACK_ENV), exist_ok=True)
            shutil.copy(paths.SPACK_ENV_FILE, os.path.join(self.stagedir, SPACK_ENV,
                                                           "spack.yaml"))
            env = os.path.join(self.stagedir, SPACK_ENV)
            self.load_cmds = [f'eval "$(spack -e {env} load --sh ior)"']

    @sanity_function
    def provided(self):
        if self.source == "spack":
            lock = os.path.join(self.stagedir, SPACK_ENV, "spack.lock")
            return sn.assert_true(os.path.isfile(lock),
                                  msg="Spack wrote no spack.lock: the environment did not "
                                      "concretize; see rfm_build.err")
        return sn.assert_found(r"/mdtest$", self.stdout,
                               msg="ior/mdtest not found after loading the tool")


class ToolCheck(ScratchCheck):
    """A run of IOR or mdtest in a fresh directory of the scratch target, in one of
    IO500's two shapes."""

    tool = fixture(IORProvider, scope="environment")
    valid_prog_environs = ["+mpi"]
    io500_shape = parameter(["easy", "hard"])
    headline_when = {"io500_shape": "easy"}
    #: name of the fresh working directory variable in the job script
    workdir_var = "SB_WORKDIR"

    @run_after("setup")
    def use_the_tool(self):
        self.modules = list(self.tool.modules_needed)

    @property
    def shape(self):
        return self.io500_shape

    @run_before("run")
    def make_workdir(self):
        # A directory of our own inside the target; the only thing the job removes.
        self.prerun_cmds = list(self.tool.load_cmds) + [
            f'{self.workdir_var}=$(mktemp -d "{self.scratch_path}/sbtool.XXXXXX") || exit 3']
        self.postrun_cmds = [f'rm -rf -- "${self.workdir_var}"']

    def job_exited_cleanly(self):
        code = self.job.exitcode
        return sn.assert_eq(code, 0, msg=f"{self.executable} exited with code {code}; see "
                                         "rfm_job.err")


class IORCheckBase(ToolCheck):
    """IOR in IO500's easy or hard shape, read from its JSON summary."""

    executable = "ior"
    io_api = "POSIX"
    title = "IOR in IO500's shapes"

    @run_after("setup")
    def set_ior_arguments(self):
        """ior-easy: file per process, 2 MiB transfers; ior-hard: one shared file,
        47008-byte transfers."""
        p = self.params
        self.layout(p.get("nodes", 1), p.get("tasks_per_node", "cores"))
        common = ["-a", self.io_api, "-w", "-r", "-e", "-i", str(p["reps"]),
                  "-O", "summaryFormat=JSON", "-O", f"summaryFile={IOR_REPORT}"]
        if self.num_nodes_used > 1:
            common.append("-C")   # read another node's data
        if self.shape == "easy":
            self.transfer_size = 2 * 1024 * 1024
            shape = ["-F", "-t", "2m", "-b", str(p["block"])]
            target = f'"${self.workdir_var}/ior_file_easy"'
        else:
            self.transfer_size = 47008
            shape = ["-t", "47008", "-b", "47008", "-s", str(p["segments"])]
            target = f'"${self.workdir_var}/ior_file_hard"'
        self.executable_opts = common + shape + ["-o", target]
        self.variant_words = ("easy: file per process, 2 MiB transfers" if self.shape == "easy"
                              else "hard: one shared file, 47008-byte transfers")
        self.workload_words = f"{self.ranks_in_words()}, {p['reps']} repetitions"
        self.keep_files = [IOR_REPORT]

    def ior_result(self):
        return self.parsed_output(IOR_REPORT, lambda t: parse_ior_json(t, source=IOR_REPORT),
                                  "IOR died before its summary")

    @sanity_function
    def valid_ior_run(self):
        result = self.ior_result()
        problems = ior_problems(result, expected_tasks=self.num_tasks)
        if not problems:
            self.samples = {f"{op}_bw": [r["bwMiB"] for r in result["results"]
                                         if r["access"] == op] for op in ("write", "read")}
        return sn.all([self.job_exited_cleanly(),
                       sn.assert_false(problems, msg="; ".join(problems))])

    @figure("MiB/s", "Write bandwidth (IOR, mean over repetitions)", headline="IOR write")
    def write_bw(self):
        return self.ior_result()["operations"]["write"]["bw_mean"]

    @figure("MiB/s", "Read bandwidth (IOR, mean over repetitions)", headline="IOR read")
    def read_bw(self):
        return self.ior_result()["operations"]["read"]["bw_mean"]


class MdtestCheckBase(ToolCheck):
    """mdtest in IO500's easy or hard shape, read from its summary table."""

    executable = "mdtest"
    io_api = "POSIX"
    title = "mdtest in IO500's shapes"

    @run_after("setup")
    def set_mdtest_arguments(self):
        """mdtest-easy: a directory per rank, empty files; mdtest-hard: one shared
        directory, 3901-byte files."""
        p = self.params
        self.layout(p.get("nodes", 1), p.get("tasks_per_node", "cores"))
        files = max(1, int(p["files_per_node"]) // self.tasks_per_node_used)
        args = ["-n", str(files), "-F", "-N", "1", "-i", str(p["reps"]),
                "-d", f'"${self.workdir_var}/mdtest"']
        if self.shape == "easy":
            args += ["-u", "-L"]
        else:
            args += ["-t", "-w", "3901", "-e", "3901"]
        self.executable_opts = args
        self.variant_words = ("easy: a directory per rank, empty files" if self.shape == "easy"
                              else "hard: one shared directory, 3901-byte files")
        self.workload_words = f"{files} files per rank, {self.ranks_in_words()}"

    def mdtest_result(self):
        return self.parsed_output(str(self.stdout.evaluate()),
                                  lambda t: parse_mdtest(t, source="mdtest output"),
                                  "the job wrote no output")

    @sanity_function
    def valid_mdtest_run(self):
        result = self.mdtest_result()
        return sn.all([
            self.job_exited_cleanly(),
            sn.assert_eq(result["tasks"], self.num_tasks,
                         msg="mdtest ran {0} tasks, {1} were launched"),
            sn.assert_true("file_creation" in result["rate"],
                           msg="mdtest reported no file creation rate"),
        ])

    def _rate(self, op):
        rate = self.mdtest_result()["rate"].get(op)
        if rate is None:
            raise sn.SanityError(f"mdtest reported no {op.replace('_', ' ')} rate")
        return rate["mean"]

    @figure("ops/s", "File creations per second (mdtest)", headline="mdtest create")
    def create_rate(self):
        return self._rate("file_creation")

    @figure("ops/s", "Stats per second (mdtest)")
    def stat_rate(self):
        return self._rate("file_stat")

    @figure("ops/s", "File removals per second (mdtest)", headline="mdtest remove")
    def remove_rate(self):
        return self._rate("file_removal")
