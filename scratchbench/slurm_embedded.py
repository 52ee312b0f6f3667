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

It also asks for job states where they are first known.  ReFrame's Slurm backend runs
``sacct`` at every poll: a query of slurmdbd and its database (0.1-0.3 s here under a
suite's load), in ReFrame's one loop, and slurmdbd learns of a job's end after slurmctld
does (tens of seconds late while the cluster starts).  This backend asks ``squeue``
(slurmctld's memory, about 10 ms) for every job's state, ``scontrol show job`` for the
exit code, end time and nodes of a job that has just ended, and ``sacct`` only about a
job slurmctld no longer holds (after MinJobAge) or one still completing.

Private members of ReFrame's, and why (written for ReFrame 4.10.4, pinned in
pyproject.toml): ReFrame gives a scheduler backend no public way to set what it learnt
of a job, so its own Slurm backend sets ``_state``, ``_exitcode`` and ``_nodespec`` on
the job in ``poll`` and names a blocked job's cause in its ``_exception``; this backend
does the same.  It extends the Slurm backend's hooks ``_cancel_if_blocked`` and
``_cancel_if_pending_too_long`` and the list they read, ``_cancel_reasons``, runs the
backend's ``_squeue`` command and records a job's end with ``_update_completion_time``.
tests/test_architecture.py fails when one of them is no longer ReFrame's.
"""

import re
import subprocess
from typing import Any

import reframe.core.runtime as rt
from reframe.core.backends import register_scheduler
from reframe.core.exceptions import JobBlockedError, SpawnedProcessTimeout
from reframe.core.schedulers.slurm import SlurmJobScheduler, slurm_state_completed
from reframe.utility import osext

#: node states (sinfo -t) in which a node takes no job until someone intervenes
OUT_OF_SERVICE_STATES = "down,drain,drained,draining,fail"
#: job states (squeue %T) of a job that has not ended; a job in any other (COMPLETED,
#: FAILED, TIMEOUT...) is asked of scontrol, one COMPLETING or no longer listed of sacct
NOT_ENDED_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
    }
)


def nodes_out_of_service() -> dict[str, str] | None:
    """{node: "drained: its reason"} for the nodes that are down, drained or failing; a
    node not responding for a moment, not (yet) down, is not among them.  None when
    sinfo cannot answer."""
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-t", OUT_OF_SERVICE_STATES, "-o", "%N|%T|%E"],
            capture_output=True,
            text=True,
            timeout=30,
        )
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

    def poll(self, *jobs: Any) -> None:
        jobs = tuple(job for job in jobs if job is not None)
        if not jobs:
            return
        ids = ",".join(job.jobid for job in jobs)
        listed = self._ask(f'{self._squeue} -h -t all -j {ids} -o "%i|%T|%r"')
        if listed is None:  # (every id unknown to slurmctld exits 1: after MinJobAge)
            super().poll(*jobs)
            return
        queued = {}
        for line in listed.splitlines():
            jobid, state, reason = (line.split("|", 2) + ["", ""])[:3]
            queued[re.split(r"_|\+", jobid.strip())[0]] = (state.strip(), reason.strip())
        waiting, accounting = [], []
        for job in jobs:
            state, _ = queued.get(job.jobid, ("", ""))
            if state in NOT_ENDED_STATES:
                job._state = state
                waiting.append(job)
            elif not (slurm_state_completed(state) and self._ended_in_memory(job)):
                accounting.append(job)  # still completing, or slurmctld forgot it
        if accounting:
            super().poll(*accounting)
        pending = {job.jobid: [queued[job.jobid][1]] for job in waiting if job.state == "PENDING"}
        if pending:
            self._cancel_if_blocked(waiting, pending)
        self._cancel_if_pending_too_long(waiting)

    def _ask(self, command):
        """The output of a Slurm client command with Unix times, or None if it failed."""
        try:
            with rt.temp_environment(env_vars={"SLURM_TIME_FORMAT": "%s"}):
                done = osext.run_command(command, timeout=30)
        except (OSError, SpawnedProcessTimeout):
            return None
        return done.stdout if done.returncode == 0 else None

    def _ended_in_memory(self, job):
        """A job that has just ended, from slurmctld: its final state, exit code (the
        highest of the batch script's and its steps', as sacct's), end time and nodes.
        False when slurmctld cannot say."""
        said = self._ask(f"scontrol -o show job {job.jobid}")
        fields = dict(re.findall(r"(\w+)=(\S*)", said or ""))
        state = fields.get("JobState", "")
        if not slurm_state_completed(state):
            return False
        codes = [
            int(fields[key].split(":")[0])
            for key in ("ExitCode", "DerivedExitCode")
            if re.fullmatch(r"\d+:\d+", fields.get(key, ""))
        ]
        if not codes:
            return False
        job._state = state
        job._exitcode = max(codes)
        job._nodespec = fields.get("NodeList", "")
        self._update_completion_time(job, [fields.get("EndTime", "")])
        return True

    def _cancel_if_blocked(self, jobs, reasons=None):
        self._cancel_reasons = list(self._configured_cancel_reasons)
        out = None
        # sinfo only when a job pends for an unavailable node (squeue's reasons say)
        unavailable = reasons is None or any(
            "ReqNodeNotAvail" in reason for said in reasons.values() for reason in said
        )
        if "ReqNodeNotAvail" in self._cancel_reasons and unavailable:
            out = nodes_out_of_service()
            if out == {}:  # every node in service: "unavailable" only means slow to answer
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
                    f"{str(error).split('] ', 1)[-1]} ({nodes})", job.jobid
                )
