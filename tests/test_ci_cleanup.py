"""ci/stop_daemons, .ci/run's clean-up: what a killed test run left is stopped, and only
that.  The daemons here are copies of `sleep` named as cluster daemons, under a
directory of this test (the prefix the clean-up is given)."""

import shutil
import subprocess
import time

from conftest import REPO

STOP = REPO / "ci" / "stop_daemons"


def fake_daemon(directory, name="glusterd"):
    """An executable that `pgrep -x NAME` finds, whose command line names DIRECTORY."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    shutil.copy("/bin/sleep", path)
    return path


def alive(directory):
    """Processes whose command line names DIRECTORY."""
    found = subprocess.run(["pgrep", "-f", str(directory)], capture_output=True, text=True)
    return found.stdout.split()


def test_a_killed_test_run_leaves_no_daemon_even_one_started_after_the_clean_up(tmp_path):
    """The tests' process group still holds a child that would start a daemon in 2 s (a
    `cluster up` outliving a killed pytest), and a daemon already in the background:
    both are gone, and a daemon of another prefix is left alone."""
    ours, other = tmp_path / "ours", tmp_path / "other"
    daemon, bystander = fake_daemon(ours), fake_daemon(other)
    tests = subprocess.Popen(
        ["bash", "-c", f"(sleep 2; exec {daemon} 60) & setsid {daemon} 61 & sleep 60"],
        start_new_session=True,
    )
    keep = subprocess.Popen([bystander, "60"])
    try:
        time.sleep(0.5)
        stop = subprocess.run(
            [STOP, str(tests.pid), str(ours)], capture_output=True, text=True, timeout=30
        )
        assert stop.returncode == 0, stop.stderr
        assert f"process group {tests.pid}" in stop.stderr
        assert f"{daemon} 61" in stop.stderr
        time.sleep(2.5)  # past the moment the killed child would have started its daemon
        assert alive(ours) == []
        assert keep.poll() is None, "a daemon outside the prefix was stopped"
    finally:
        subprocess.run(["pkill", "-f", str(tmp_path)])
        tests.wait(timeout=10)
        keep.wait(timeout=10)


def test_stop_daemons_without_a_prefix_says_its_usage_in_one_line():
    stop = subprocess.run([STOP, "-"], capture_output=True, text=True)
    assert stop.returncode == 2
    assert stop.stderr.count("\n") == 1 and "PATH_PREFIX" in stop.stderr
