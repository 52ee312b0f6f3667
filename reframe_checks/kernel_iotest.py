"""IOTest checks (seed 002) through scratchbench-kernel: file per process and one shared
file, POSIX and MPI-IO (independent and collective), on every scratch target."""

import reframe as rfm
from reframe.core.builtins import parameter, run_after

from reframe_checks.lib.kernel import IOTestCheckBase

ACCESS_IN_WORDS = {
    "fpp-posix": "file per process, POSIX",
    "shared-posix": "one shared file, POSIX",
    "shared-mpiio": "one shared file, MPI-IO independent",
    "shared-mpiio-coll": "one shared file, MPI-IO collective",
}


@rfm.simple_test
class KernelIOTest(IOTestCheckBase):
    access = parameter(list(ACCESS_IN_WORDS))
    # The pages lead with large sequential transfers, file per process.
    headline_when = {"access": "fpp-posix"}

    @run_after("init")
    def choose_access(self):
        layout, api, *coll = self.access.split("-")
        self.layout_kind, self.io_api, self.collective = layout, api, bool(coll)
        self.variant_words = ACCESS_IN_WORDS[self.access]
