"""Node-count and processes-per-node sweeps of IOTest (file per process, POSIX).

Seed 002's job script halved the node count down to 1 at a fixed number of processes
per node; the counts here are derived from the largest partition's size (its
``extras['nodes']``), and variants larger than a partition are skipped there.
"""

import reframe as rfm
from reframe.core.builtins import parameter, run_after

from reframe_checks.lib.kernel import IOTestCheckBase
from reframe_checks.lib.targets import doubling, halving, max_cores, max_nodes


@rfm.simple_test
class KernelNodeSweep(IOTestCheckBase):
    workload_family = "sweep"
    title = "Node-count sweep (IOTest, file per process)"
    scaling_parameter = "node_count"
    node_count = parameter(halving(max_nodes()))

    @run_after("init")
    def set_nodes(self):
        self.nodes_wanted = self.node_count
        self.variant_words = f"{self.node_count} node{'s' * (self.node_count > 1)}"


@rfm.simple_test
class KernelProcessSweep(IOTestCheckBase):
    workload_family = "sweep"
    title = "Processes-per-node sweep (IOTest, file per process)"
    scaling_parameter = "tasks_per_node"
    tasks_per_node = parameter(doubling(max_cores()))

    @run_after("init")
    def set_tasks(self):
        self.nodes_wanted = 1
        self.tasks_per_node_wanted = self.tasks_per_node
        self.variant_words = (
            f"{self.tasks_per_node} process{'es' * (self.tasks_per_node > 1)} on one node"
        )
