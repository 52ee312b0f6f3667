"""IOTest checks (seed 002) through scratchbench-kernel: file per process and one shared
file, POSIX and MPI-IO (independent and collective), on every scratch target."""

import reframe as rfm
from reframe.core.builtins import parameter, run_after

from reframe_checks.lib.kernel import IOTestCheckBase


@rfm.simple_test
class KernelIOTest(IOTestCheckBase):
    access = parameter(["fpp-posix", "shared-posix", "shared-mpiio", "shared-mpiio-coll"])

    @run_after("init")
    def choose_access(self):
        layout, api, *coll = self.access.split("-")
        self.layout_kind, self.io_api, self.collective = layout, api, bool(coll)
