"""Seed 003's self-scaling I/O benchmark (Chen and Patterson) through scratchbench-kernel:
the search for each parameter's focal value, the page-cache knee, the one-parameter
curves, and the product-form prediction checked on held-out workloads, on every
scratch target."""

import reframe as rfm

from reframe_checks.lib.selfscale import SelfScaleCheckBase


@rfm.simple_test
class KernelSelfScale(SelfScaleCheckBase):
    headline_when = {}
