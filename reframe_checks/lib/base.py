"""The base of every scratchbench check: one scratch target, exclusive nodes.

A check derived from :class:`ScratchCheck` runs once per scratch target the site
declares (the ``scratch_target`` parameter), only on partitions that reach that
target (``valid_systems = ['+scratch_<name>']``), with exclusive nodes, and records
the target's name and kind, the node count and tasks per node with its figures
(they appear in the perflog and the run report).  References come from
``site_configs/references/<system>.yaml`` through ReFrame's ``$ref``, indexed by
partition and target, so each site keeps its own expectations as data.
"""

import os

import reframe as rfm
import reframe.core.runtime as rt
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_after, variable

from reframe_checks.lib.parsers import ParseError
from reframe_checks.lib.targets import TAGS, declared_targets, target_info, workload


class ScratchCheck(rfm.RunOnlyRegressionTest):
    scratch_target = parameter(declared_targets())
    #: quick, nightly or acceptance: which entry of workloads.yaml this variant runs
    workload_tag = parameter(TAGS)
    #: the family in workloads.yaml (set by subclasses)
    workload_family = variable(str)

    scratch_kind = variable(str, value="")
    scratch_path = variable(str, value="")
    scratch_per_job = variable(bool, value=False)
    num_nodes_used = variable(int, value=1)
    tasks_per_node_used = variable(int, value=1)
    #: bytes per transfer and the I/O interface, where they apply (0 and "" otherwise)
    transfer_size = variable(int, value=0)
    io_api = variable(str, value="")
    #: the values of this variant's workload entry, with layout resolved
    params = variable(dict, value={})
    #: per-repetition values of each performance variable, when the tool reports them;
    #: kept in the run report, so acceptance verdicts test the repetitions themselves
    samples = variable(dict, value={})

    exclusive_access = True
    maintainers = ["scratchbench"]

    @run_after("init")
    def select_target_and_workload(self):
        self.valid_systems = [f"+scratch_{self.scratch_target}"]
        self.tags = {self.workload_tag, f"fs:{self.scratch_target}"}
        self.params = workload(self.workload_family, self.workload_tag)
        self.descr = (f"{type(self).__name__} on scratch target {self.scratch_target}, "
                      f"{self.workload_tag} workload")

    @run_after("setup")
    def resolve_target(self):
        info = target_info(self.current_partition, self.scratch_target)
        self.scratch_kind = info["kind"]
        self.scratch_path = info["path"]
        self.scratch_per_job = bool(info.get("per_job"))
        refs = os.path.join(rt.runtime().get_option("general/0/reference_prefix") or "",
                            f"{self.current_system.name}.yaml")
        if os.path.isfile(refs):
            self.reference = {"$ref": os.path.basename(refs)}

    def layout(self, nodes, tasks_per_node):
        """Nodes and tasks per node; 'cores' means the partition's cores per node."""
        if tasks_per_node == "cores":
            extras = self.current_partition.extras
            tasks_per_node = int(extras.get("cpus_per_node",
                                            self.current_partition.processor.num_cpus or 1))
        self.num_nodes_used = int(nodes)
        self.tasks_per_node_used = int(tasks_per_node)
        self.num_tasks_per_node = self.tasks_per_node_used
        self.num_tasks = self.num_nodes_used * self.tasks_per_node_used
        available = int(self.current_partition.extras.get("nodes", self.num_nodes_used))
        self.skip_if(self.num_nodes_used > available,
                     f"needs {self.num_nodes_used} nodes, partition "
                     f"{self.current_partition.fullname} has {available}")
        # More ranks than a node advertises would pend forever under Slurm.
        if self.current_partition.extras.get("overcommit") and \
                self.current_partition.scheduler.registered_name == "slurm":
            self.job.options += ["--overcommit"]

    def parsed_output(self, filename, parse, missing):
        """parse(text of stagedir/filename), once per check: sanity and every figure
        share it.  A missing file or a ParseError is a SanityError every time."""
        cache = self.__dict__.setdefault("_parsed_outputs", {})
        if filename not in cache:
            try:
                with open(os.path.join(self.stagedir, filename)) as f:
                    cache[filename] = parse(f.read())
            except FileNotFoundError:
                cache[filename] = ParseError(f"{filename} missing: {missing}")
            except ParseError as exc:
                cache[filename] = exc
        if isinstance(cache[filename], ParseError):
            raise sn.SanityError(str(cache[filename]))
        return cache[filename]
