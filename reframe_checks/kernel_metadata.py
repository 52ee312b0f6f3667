"""Open/close at scale and deletion cost (seed 002) through scratchbench-kernel: one
shared directory or one per rank; removal by one thread or several per rank."""

import reframe as rfm
from reframe.core.builtins import parameter, run_after

from reframe_checks.lib.kernel import MetadataCheckBase

LAYOUT_IN_WORDS = {"shared-dir": "one shared directory", "dir-per-rank": "a directory per rank"}


@rfm.simple_test
class KernelMetadata(MetadataCheckBase):
    directory_layout = parameter(list(LAYOUT_IN_WORDS))
    parallel_removers = parameter([1, 4])
    # The pages lead with what a job does most: many files in one directory, one remover.
    headline_when = {"directory_layout": "shared-dir", "parallel_removers": 1}

    @run_after("init")
    def choose_layout(self):
        self.dir_per_rank = self.directory_layout == "dir-per-rank"
        self.removers = self.parallel_removers
        self.variant_words = (
            f"{LAYOUT_IN_WORDS[self.directory_layout]}, "
            f"{self.removers} remover{'s' * (self.removers > 1)} per rank"
        )
