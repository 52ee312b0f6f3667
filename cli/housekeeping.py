"""What keeps unattended nights safe: one run per site and history at a time, no job
left in the queue by a run, and runs that were killed picked up by the next one.

Every job a run submits carries ``--comment=scratchbench-run:<run id>`` (set by the
checks from ``SCRATCHBENCH_RUN_ID``), so jobs can be traced back to their run.
"""

import fcntl
import json
import os
import socket
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from scratchbench import paths
from scratchbench.errors import ScratchbenchError

JOB_COMMENT = "scratchbench-run:"


class RunLocked(ScratchbenchError):
    """Another run of the same site and history holds the lock."""

    exit_code = 6


def process_alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


class RunLock:
    """An exclusive lock per site and state directory, held for a whole run.

    flock(2) is released by the kernel when the holder dies, so a lock cannot outlive
    its run; the file's content (run id, pid, start time) names the holder for the
    one-line refusal, and tells the next run that it takes over after a dead one.
    """

    def __init__(self, site_path):
        self.path = paths.state_dir() / "locks" / f"run-{Path(site_path).stem}.lock"
        self.file = None
        self.took_over = None

    def acquire(self, run_id):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(self.path, "a+")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder()
            self.file.close()
            raise RunLocked(
                f"another run of this site holds {self.path}: run {holder.get('run_id', '?')}"
                f" (pid {holder.get('pid', '?')} on {holder.get('host', '?')}) since "
                f"{holder.get('since', '?')}; wait for it or stop it"
            ) from None
        previous = self._holder()
        if (
            previous.get("pid")
            and previous.get("host") == socket.gethostname()
            and not process_alive(previous["pid"])
        ):
            self.took_over = previous
        self.acquire_for(run_id)
        return self

    def acquire_for(self, run_id):
        """Name the run holding the lock once its id is known."""
        self.file.seek(0)
        self.file.truncate()
        json.dump(
            {
                "run_id": run_id,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            },
            self.file,
        )
        self.file.flush()

    def _holder(self):
        try:
            self.file.seek(0)
            return json.loads(self.file.read() or "{}")
        except ValueError:
            return {}

    def release(self):
        if self.file:
            self.file.seek(0)
            self.file.truncate()
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.file.close()
            self.file = None


def jobs_of_runs(run_ids, env):
    """{job id: run id} of queued or running Slurm jobs submitted by these runs."""
    try:
        out = subprocess.run(
            ["squeue", "-h", "-o", "%i|%k"], capture_output=True, text=True, env=env, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    found = {}
    for line in out.stdout.splitlines():
        job, _, comment = line.partition("|")
        if comment.startswith(JOB_COMMENT) and comment[len(JOB_COMMENT) :] in run_ids:
            found[job.strip()] = comment[len(JOB_COMMENT) :]
    return found


def cancel_jobs(jobs, env):
    if jobs:
        subprocess.run(["scancel", *jobs], capture_output=True, env=env, timeout=30)


def interrupted_runs(runs_dir):
    """Run directories whose run never finished and whose process is gone."""
    found = []
    for run_dir in sorted(p for p in Path(runs_dir).glob("*") if p.is_dir()):
        try:
            meta = json.loads((run_dir / "run.json").read_text())
        except (OSError, ValueError):
            continue
        if meta.get("finished") or meta.get("interrupted"):
            continue
        same_host = meta.get("host", socket.gethostname()) == socket.gethostname()
        if same_host and meta.get("pid") and process_alive(meta["pid"]):
            continue
        found.append((run_dir, meta))
    return found


def mark_interrupted(run_dir, meta, what):
    meta = dict(
        meta,
        interrupted=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        interrupted_what=what,
    )
    (run_dir / "run.json").write_text(json.dumps(meta, indent=2) + "\n")
