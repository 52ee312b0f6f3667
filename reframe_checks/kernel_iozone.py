"""IOzone (seed 004) through scratchbench-kernel: write, re-write, read, re-read, random
read and write, backward read, record re-write, stride read and random mix over a
file-size x record-size matrix, on every scratch target; one process (IOzone's automatic
mode, as seed 004 ran it) and two at once (its throughput mode, with the random mix)."""

import reframe as rfm
from reframe.core.builtins import parameter, run_after

from reframe_checks.lib.iozone import IOzoneCheckBase


@rfm.simple_test
class KernelIOzone(IOzoneCheckBase):
    processes = parameter([1, 2])
    # The pages lead with one process, as seed 004's runs.
    headline_when = {"processes": 1}

    @run_after("init")
    def choose_processes(self):
        self.processes_wanted = self.processes
