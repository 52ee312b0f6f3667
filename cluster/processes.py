"""Processes the embedded cluster started, by PID: alive or not, and what they run."""

import os
from pathlib import Path


def process_alive(pid):
    """True while PID runs; a zombie counts as gone (PID 1 here reaps late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def process_program(pid):
    """Basename of argv[0] of PID, or None."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return None
    return os.path.basename(argv0.decode(errors="replace"))
