"""Jovian-2's placements (seed 001) through scratchbench-kernel: local, one-to-many and
many-to-many reads of data written on other nodes, on every scratch target (the remote
placements where the target is shared between nodes)."""

import reframe as rfm

from reframe_checks.lib.kernel import JovianCheckBase


@rfm.simple_test
class KernelJovian(JovianCheckBase):
    headline_when = {}
