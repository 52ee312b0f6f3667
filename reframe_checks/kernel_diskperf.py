"""diskperf (seed 000) through scratchbench-kernel: queued asynchronous I/O to every disk
of a node at once, swept over block sizes and queue depths, on every scratch target."""

import reframe as rfm

from reframe_checks.lib.kernel import DiskperfCheckBase


@rfm.simple_test
class KernelDiskperf(DiskperfCheckBase):
    headline_when = {}
