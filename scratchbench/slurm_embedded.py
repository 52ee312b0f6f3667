"""A ReFrame scheduler backend for the embedded cluster: Slurm, waiting out a slow node.

ReFrame's Slurm backend cancels a job pending as "ReqNodeNotAvail", a sign that it
would wait for an administrator.  On the embedded cluster the slurmd share this
machine's cores with the benchmarks; under load a node can miss slurmctld's ping and be
marked not responding for a moment, and a job that needs it then pends as
"ReqNodeNotAvail, UnavailableNodes:n2" (CI saw a two-node Jovian job cancelled so).  A
job pends with the same reason behind a node that is down or drained, where it would
wait for ever.  This backend tells the two apart: it cancels such a job only while a
node is down, drained or failing, and names that node and its reason; otherwise the job
waits.  The embedded site config selects it with ``'scheduler': 'slurm_embedded'``
after importing this module; a real site keeps ReFrame's ``slurm``.
"""

import subprocess

from reframe.core.backends import register_scheduler
from reframe.core.exceptions import JobBlockedError
from reframe.core.schedulers.slurm import SlurmJobScheduler

#: node states (sinfo -t) in which a node takes no job until someone intervenes
OUT_OF_SERVICE_STATES = "down,drain,drained,draining,fail"


def nodes_out_of_service():
    """{node: "drained: its reason"} for the nodes that are down, drained or failing; a
    node not responding for a moment, not (yet) down, is not among them.  None when
    sinfo cannot answer."""
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-t", OUT_OF_SERVICE_STATES,
                              "-o", "%N|%T|%E"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    nodes = {}
    for line in out.stdout.splitlines():
        node, state, reason = (line.split("|", 2) + ["", ""])[:3]
        reason = reason.strip()
        nodes[node] = state + (f": {reason}" if reason and reason != "none" else "")
    return nodes


@register_scheduler("slurm_embedded")
class EmbeddedSlurmScheduler(SlurmJobScheduler):
    def __init__(self):
        super().__init__()
        self._configured_cancel_reasons = list(self._cancel_reasons)

    def _cancel_if_blocked(self, jobs, reasons=None):
        self._cancel_reasons = list(self._configured_cancel_reasons)
        out = None
        if "ReqNodeNotAvail" in self._cancel_reasons:
            out = nodes_out_of_service()
            if out == {}:   # every node in service: "unavailable" only means slow to answer
                self._cancel_reasons.remove("ReqNodeNotAvail")
        before = {job: job.exception for job in jobs}
        super()._cancel_if_blocked(jobs, reasons)
        if not out:
            return
        # the jobs cancelled just now: say which node blocked them, and why
        nodes = "; ".join(f"node {node} is {state}" for node, state in sorted(out.items()))
        for job in jobs:
            error = job.exception
            if error is not before[job] and isinstance(error, JobBlockedError):
                job._exception = JobBlockedError(
                    f"{str(error).split('] ', 1)[-1]} ({nodes})", job.jobid)
