"""Open/close at scale and deletion cost (seed 002) through scratchbench-kernel: one
shared directory or one per rank; removal by one thread or several per rank."""

import reframe as rfm
from reframe.core.builtins import parameter, run_after

from reframe_checks.lib.kernel import MetadataCheckBase


@rfm.simple_test
class KernelMetadata(MetadataCheckBase):
    directory_layout = parameter(["shared-dir", "dir-per-rank"])
    parallel_removers = parameter([1, 4])

    @run_after("init")
    def choose_layout(self):
        self.dir_per_rank = self.directory_layout == "dir-per-rank"
        self.removers = self.parallel_removers
