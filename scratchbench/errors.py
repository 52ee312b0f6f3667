"""One exception type for every error a user can cause or fix.

The CLI prints ``scratchbench: error: <message>`` on one line and exits with
``exit_code``; nothing else is printed, so scripts and people see the cause.
"""


class ScratchbenchError(Exception):
    """A failure with a one-line, user-facing explanation."""

    exit_code = 1

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(ScratchbenchError):
    """A site config, target declaration or option is malformed."""

    exit_code = 2


class ClusterError(ScratchbenchError):
    """The embedded cluster could not be started, reached or stopped."""

    exit_code = 3


class RunError(ScratchbenchError):
    """A suite run could not start or ReFrame reported failures."""

    exit_code = 4


def one_line(message: object) -> str:
    """A multi-line error message in one line.  ReFrame's message for a failed command
    (a module system's, say) holds the command's whole stdout and stderr: keep its
    first line and what the command said on stderr, without Lmod's "Try: ..." advice;
    any other message has its whitespace folded."""
    text = str(message or "")
    if "--- stderr ---" in text:
        head = text.split("\n", 1)[0].rstrip(":")
        said = " ".join(text.split("--- stderr ---")[1].split("Try:")[0].split())
        return f"{head}: {said or 'nothing on stderr'}"
    return " ".join(text.split())
