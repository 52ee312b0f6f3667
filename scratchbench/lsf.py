"""A ReFrame scheduler backend for standard LSF job scripts.

ReFrame's ``lsf`` backend writes ``#BSUB -nnodes N`` whenever a test sets
``num_tasks_per_node``: that is LLNL's CSM dialect (ReFrame issues 2383, 2389), which
standard LSF, LSF/Lava and OpenLava reject.  Standard LSF asks for the total number of
slots and places them with ``-R "span[ptile=N]"``.  ``lsf_std`` is ReFrame's LSF
backend with exactly that line done the standard way; a site config selects it with
``'scheduler': 'lsf_std'`` after importing this module.
"""

import re
from typing import Any

from reframe.core.backends import register_scheduler
from reframe.core.schedulers.lsf import LsfJobScheduler

_NNODES = re.compile(r"^#BSUB -nnodes \d+$")


@register_scheduler("lsf_std")
class StandardLsfJobScheduler(LsfJobScheduler):
    def emit_preamble(self, job: Any) -> list[str]:
        preamble = []
        for line in super().emit_preamble(job):
            if _NNODES.match(line):
                # -n counts slots (tasks); ptile spreads them N per node.
                preamble.append(f"{self._prefix} -n {job.num_tasks}")
                preamble.append(f'{self._prefix} -R "span[ptile={job.num_tasks_per_node}]"')
            else:
                preamble.append(line)
        return preamble
