"""The `scratchbench` command line.

    scratchbench cluster up|down|status     the embedded Slurm cluster on this machine
    scratchbench run --tag quick            a tag of the suite on a site, via ReFrame
    scratchbench check-site SITE            is a site config ready (scheduler, targets, MPI)
    scratchbench advise LOG|YAML            a job's I/O time on each scratch target

Every error is one line, ``scratchbench: error: ...``, and a non-zero exit code.
"""

import argparse
import errno
import json
import os
import sqlite3
import sys

from reports import verdict_methods as methods
from scratchbench import __version__, paths, units
from scratchbench.errors import ClusterError, ConfigError, ScratchbenchError

EPILOG = (
    "State (cluster, results, history) lives in $SCRATCHBENCH_HOME, "
    f"default {paths.REPO_ROOT / 'var'}."
)


def _size(text, option=None):
    """A SAN option's size (GlusterFS's convention: 8g, 8GB and 8GiB are all 8 x 1024^3);
    a bad one names ``option`` when given."""
    try:
        return units.parse_size(text, decimal=False)
    except ValueError as error:
        if option:
            raise ClusterError(
                f"{option} {text}: expected a number of bytes with an "
                "optional unit (4 GiB, 512m, 1048576)"
            ) from None
        raise ClusterError(str(error)) from None


def _cluster(args):
    from cluster import ClusterSpec, EmbeddedCluster

    cluster = EmbeddedCluster(paths.cluster_dir())
    if args.action != "san" and (
        args.servers is not None or args.stripe_size is not None or args.set
    ):
        raise ClusterError(
            f"cluster {args.action}: --servers, --stripe-size and --set "
            "change a running SAN: use them with `cluster san`"
        )
    if args.action == "up":
        spec = ClusterSpec(
            nodes=args.nodes,
            cpus_per_node=args.cpus_per_node,
            base_port=args.base_port,
            san_root=args.scratch_root or "",
            san_servers=args.san_servers,
            san_brick_size=_size(args.san_brick_size) if args.san_brick_size else 0,
            san_stripe_size=_size(args.san_stripe_size),
        )
        status = cluster.up(spec)
    elif args.action == "down":
        cluster.down()
        return 0
    elif args.action == "san":
        return _change_san(cluster, args)
    elif args.action == "health":
        problems = cluster.problems()
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    else:
        status = cluster.status()
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        print(_format_status(status))
    return 0 if status["up"] or args.action == "status" else 3


def _change_san(cluster, args):
    """`cluster san`: change the running volume (refused while a run holds the local
    site's run lock: its figures would mix two configurations), or describe it."""
    from cli.housekeeping import RunLock
    from scratchbench.sites import resolve_site_config

    settings = []
    for item in args.set or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ClusterError(
                f"--set {item}: expected KEY=VALUE, e.g. performance.write-behind=off"
            )
        settings.append((key.strip(), value.strip()))
    stripe = None if args.stripe_size is None else _size(args.stripe_size, "--stripe-size")
    if args.servers is None and stripe is None and not settings:
        volume = cluster.describe_san()
        print(json.dumps(volume, indent=2) if args.json else "\n".join(_format_volume(volume)))
        return 0
    lock = RunLock(resolve_site_config("local")).acquire("cluster san (a change of the SAN)")
    try:
        for line in cluster.change_san(servers=args.servers, stripe_size=stripe, settings=settings):
            print(line)
    finally:
        lock.release()
    return 0


def _format_volume(volume):
    from cluster.san import stripe_words

    lines = [
        f"volume {volume['volume']}: {volume['servers']} storage servers, "
        f"{stripe_words(volume['stripe_size'])}"
    ]
    lines += [f"  brick {brick}" for brick in volume["bricks"]]
    lines += [f"  option {key} = {value}" for key, value in sorted(volume["options"].items())]
    lines += [
        f"  {c['date']} {c['change']}: {c['before']} -> {c['after']}" for c in volume["changes"]
    ]
    return lines


def _format_status(status):
    if not status.get("spec"):
        return f"embedded cluster: not set up ({status['dir']})"
    lines = [f"embedded cluster: {'up' if status['up'] else 'DOWN'} ({status['dir']})"]
    if status.get("slurm_conf"):
        lines.append(f"  SLURM_CONF={status['slurm_conf']}")
    spec = status["spec"]
    lines.append(
        f"  ports from {spec.get('base_port')} ({status.get('ports')}); munge socket "
        f"and key in {status.get('munge_dir')}"
    )
    for d in status["daemons"]:
        lines.append(
            f"  {d['name']:<12} pid {d['pid']:<8} {'running' if d['alive'] else 'stopped'}"
            f"  log {d['log']}"
        )
    for node, state in sorted(status.get("nodes", {}).items()):
        lines.append(f"  node {node}: {state}")
    lines.extend(_format_san(status.get("san") or {}, spec))
    return "\n".join(lines)


def _format_san(san, spec):
    from cluster.san import stripe_words

    root = spec.get("san_root")
    if san.get("kind") != "glusterfs":
        reason = f" ({san['reason']})" if san.get("reason") else ""
        return [
            f"  per-job scratch (MYSANSCRATCH) under {root}: a plain directory of this "
            f"machine, not a SAN{reason}"
        ]
    stripe = stripe_words(san.get("stripe_size"))
    lines = [
        f"  SAN: GlusterFS volume '{san.get('volume')}' on {san.get('address')}, "
        f"{san.get('servers')} storage servers of {units.size_words(san.get('brick_size', 0))}, "
        f"{stripe}; mounted at {root} on this machine and on every node (its own client)",
        f"  per-job scratch (MYSANSCRATCH) under {root}",
    ]
    for brick in san.get("bricks", []):
        lines.append(
            f"  storage server {brick['server'][1:]}: "
            f"{'online' if brick['online'] else 'DOWN'}, pid {brick['pid']}, port "
            f"{brick['port']}, {brick['path']}"
        )
    for node, ok in sorted(san.get("node_mounts", {}).items()):
        lines.append(f"  node {node}'s own client: {'mounted' if ok else 'GONE'} at {root}")
    for key, value in sorted((san.get("options") or {}).items()):
        lines.append(f"  SAN option {key} = {value}")
    for change in (san.get("changes") or [])[-3:]:
        lines.append(
            f"  SAN changed {change['date']}: {change['change']}: {change['before']} "
            f"-> {change['after']}"
        )
    for problem in san.get("problems", []):
        lines.append(f"  SAN problem: {problem}")
    return lines


def _run(args):
    from reports import commands
    from cli.runner import format_summary, run_suite

    code, summary = run_suite(
        args.tag,
        site=args.site,
        partition=args.partition,
        target=args.target,
        names=args.name or (),
        note=args.note or "",
        environ=args.environ,
        start_cluster=not args.no_start,
        local=args.local,
        spack_env=args.spack_env,
        extra_args=["--exec-policy=serial"] if args.serial else (),
    )
    # Every run lands in the history store at once, so verdicts and pages see it.  If
    # the store cannot take it (full, read-only, damaged), the run's report stays on disk
    # and the figures are printed all the same.
    try:
        runs, figures, total = commands.ingest([summary["run_dir"]])
    except ScratchbenchError as exc:
        summary["history"] = (
            f"NOT STORED: {exc}; the run report stays in "
            f"{summary['run_dir']}: store it later with "
            f"`scratchbench ingest {summary['run_dir']}`"
        )
        print(format_summary(summary))
        print(f"scratchbench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    summary["history"] = f"{figures} figures added to {paths.history_db()} ({total} in all)"
    print(format_summary(summary))
    return code


def _check_site(args):
    from cli.runner import run_suite

    with open(os.devnull, "w") as quiet:  # ReFrame's output stays in reframe.out
        code, summary = run_suite(
            "quick",
            site=args.site,
            partition=args.partition,
            start_cluster=not args.no_start,
            local=args.local,
            spack_env=args.spack_env,
            checks_tag="site",
            stream=quiet,
        )
    for line in summary["site_lines"]:
        print(line)
    failed = sum(line.startswith("FAIL") for line in summary["site_lines"])
    print(
        f"site {args.site}: "
        + ("ready" if code == 0 else f"{failed} problem(s) to fix")
        + f" (ReFrame's output: {summary['run_dir']}/reframe.out)"
    )
    return code


def _ingest(args):
    from reports import commands

    try:
        runs, figures, total = commands.ingest(args.sources)
    except commands.NotAllStored as exc:
        # The good runs are stored: say so, then name each bad source on its own line.
        runs, figures, total = exc.stored
        errors = exc.errors
    else:
        errors = []
    print(
        f"ingested {runs} run(s), {figures} figure(s); the history store "
        f"{paths.history_db()} holds {total} figure(s)"
    )
    for error in errors:
        print(f"scratchbench: error: {error}", file=sys.stderr)
    return max((e.exit_code for e in errors), default=0)


def _verdict(args):
    from reports import commands

    if args.kind == "nightly":
        code, result, path = commands.nightly(
            run_id=args.run, tag=args.tag, out=args.out, notify=args.notify
        )
        print(commands.format_nightly(result, path))
    else:
        code, result, path = commands.acceptance(args.before, args.after, out=args.out)
        print(commands.format_acceptance(result, path))
    return code


def writable_directory(path, option):
    """path as a directory we may write in (made if missing), or a one-line error."""
    path = os.path.abspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigError(f"{option} {path}: exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot make the directory ({exc.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {path}: not writable by this user")
    return path


def _report(args):
    from reports import commands

    pages_written, figures, seconds = commands.report(
        args.out, prepare_out=lambda: writable_directory(args.out, "--out")
    )
    print(
        f"wrote {pages_written} pages from {figures} figures in {seconds:.1f} s: "
        f"{args.out}/index.html"
    )
    return 0


def _advise(args):
    from reports import advisor, advisor_report, job_profile

    profile = job_profile.load_profile(args.workload, nodes=args.nodes, stage=args.stage)
    result = advisor.advise(profile)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(advisor_report.format_advice(result))
    return 0


def _add_cluster_command(sub):
    """`scratchbench cluster`: the embedded Slurm cluster and its SAN."""
    cluster = sub.add_parser(
        "cluster",
        help="the embedded Slurm cluster on this machine",
        description="Start, stop or inspect the embedded Slurm cluster: munged, MariaDB + "
        "slurmdbd, slurmctld and N slurmd on 127.0.0.1, a GlusterFS SAN (storage "
        "servers on disk images of their own, a client on every node), and a "
        "prolog/epilog that makes and removes a per-job MYSANSCRATCH directory "
        "on the SAN.",
        epilog=EPILOG,
    )
    cluster.add_argument(
        "action",
        choices=["up", "down", "status", "health", "san"],
        help="up: start (a no-op when running; repairs what of the SAN is "
        "gone); down: stop the daemons it started; status: daemons, "
        "node states, the SAN's servers; health: what is wrong, one "
        "line each (nothing and exit 0 when healthy, exit 1 otherwise); "
        "san: change the running SAN as an admin would (--servers, "
        "--stripe-size, --set; refused while a run holds the lock), "
        "each change recorded with its date; without those, describe "
        "the volume (servers, bricks, shard block size, options)",
    )
    cluster.add_argument("--nodes", type=int, default=2, help="slurmd nodes (default 2)")
    cluster.add_argument(
        "--cpus-per-node", type=int, default=2, help="CPUs each node advertises (default 2)"
    )
    cluster.add_argument(
        "--base-port",
        type=int,
        default=None,
        help="first TCP port; the cluster uses base..base+2 and base+10.. "
        "(default: the first free block from 17817 up, recorded in "
        "the cluster's state so status and down find it)",
    )
    cluster.add_argument(
        "--scratch-root",
        metavar="DIR",
        help="where the SAN is mounted and per-job directories go "
        "(default <cluster dir>/sanscratch)",
    )
    cluster.add_argument(
        "--san-servers",
        type=int,
        default=2,
        metavar="N",
        help="GlusterFS storage servers of the SAN, each a brick on a disk "
        "image of its own (default 2; 0: per-job directories on a "
        "plain directory, no SAN)",
    )
    cluster.add_argument(
        "--san-brick-size",
        default=None,
        metavar="SIZE",
        help="each storage server's disk, a sparse XFS image (default 1.5 x "
        "this machine's memory, at least 8g: room for the nightly "
        "IOzone file past the node's memory; where the disk below has "
        "less room, 3/4 of its free space shared out, so that the SAN "
        "never offers room the disk below does not have)",
    )
    cluster.add_argument(
        "--san-stripe-size",
        default="0",
        metavar="SIZE",
        help="shard files across the servers in blocks of SIZE, the seeds' "
        "stripe (a power of two, 4m and up; default 0: files stay whole "
        "on one server)",
    )
    cluster.add_argument(
        "--servers",
        type=int,
        metavar="N",
        help="san: storage servers the volume should have: new ones get a "
        "disk of their own, then the files are rebalanced; removed ones "
        "(the last first) have their files moved to the others first",
    )
    cluster.add_argument(
        "--stripe-size",
        metavar="SIZE",
        help="san: shard files in blocks of SIZE (a power of two, 4m and "
        "up; 0 turns sharding off, refused while sharded files exist)",
    )
    cluster.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="san: set a volume option, e.g. performance.write-behind=off (repeatable)",
    )
    cluster.add_argument("--json", action="store_true", help="print the status as JSON")
    cluster.set_defaults(func=_cluster)


def _add_run_command(sub):
    """`scratchbench run`: the suite on a site."""
    run = sub.add_parser(
        "run",
        help="run a tag of the suite (quick, nightly, acceptance)",
        description="Run one tag of the ReFrame suite on a site config, with "
        "--warn-as-error; print the figures and where the run report, perflogs "
        "and job outputs went.  On the local site the embedded cluster is "
        "started when it is not running; when it cannot start, the suite runs "
        "through ReFrame's local scheduler instead, and says so.",
        epilog=EPILOG,
    )
    run.add_argument("--tag", default="quick", help="quick (default), nightly or acceptance")
    run.add_argument(
        "--site",
        default="local",
        help="site config: a name in site_configs/ or a path (default local)",
    )
    run.add_argument("--partition", help="only this partition of the site's system")
    run.add_argument("--target", help="only this scratch target")
    run.add_argument(
        "--name",
        action="append",
        metavar="PATTERN",
        help="only checks whose name matches (ReFrame -n); repeatable",
    )
    run.add_argument(
        "--environ",
        metavar="NAME",
        help="only this programming environment of the site (ReFrame -p), e.g. gnu-openmpi",
    )
    run.add_argument("--note", help="free text kept with the run, e.g. a change ticket")
    run.add_argument(
        "--serial",
        action="store_true",
        help="one check at a time (ReFrame's serial execution policy): no two "
        "checks share a file system at once or, on the embedded cluster, "
        "this machine's cores; steadier figures, a longer run",
    )
    run.add_argument(
        "--no-start", action="store_true", help="fail instead of starting the embedded cluster"
    )
    run.add_argument(
        "--local",
        action="store_true",
        help="local site: run through ReFrame's local scheduler and mpirun on "
        "this machine instead of the embedded cluster (also the fallback "
        "when the cluster cannot start)",
    )
    run.add_argument(
        "--spack-env",
        metavar="SPACK_YAML",
        help="the Spack environment file the IOR/mdtest checks build for "
        "environments with extras {'ior': 'spack'} (default spack.yaml of "
        "the checkout); files it includes by a relative path are taken "
        "from beside it (ReFrame's -S spack_env_file=PATH)",
    )
    run.set_defaults(func=_run)


def _add_check_site_command(sub):
    """`scratchbench check-site`: what a site config asks for, before a run."""
    check = sub.add_parser(
        "check-site",
        help="is a site config ready: scheduler, targets, MPI, IOR",
        description="A site's first hour: one tiny exclusive job per question, through the "
        "site's scheduler. Per scratch target: writable from a job, and its free "
        "room; per MPI environment: its modules load, its MPI builds the kernel "
        "and runs two ranks, and IOR/mdtest come as extras 'ior' says. One line "
        "per answer (ok, skip, FAIL with the cause and the fix). Exit 0 only "
        "when everything the config asks for works; nothing goes to the history.",
        epilog=EPILOG,
    )
    check.add_argument(
        "site",
        nargs="?",
        default="local",
        help="site config: a name in site_configs/ or a path (default local)",
    )
    check.add_argument("--partition", help="only this partition of the site's system")
    check.add_argument(
        "--no-start", action="store_true", help="fail instead of starting the embedded cluster"
    )
    check.add_argument(
        "--local",
        action="store_true",
        help="local site: through ReFrame's local scheduler on this machine",
    )
    check.add_argument(
        "--spack-env",
        metavar="SPACK_YAML",
        help="the Spack environment file for extras {'ior': 'spack'}, as for run",
    )
    check.set_defaults(func=_check_site)


def _add_ingest_command(sub):
    """`scratchbench ingest`: run directories into the history store."""
    ingest = sub.add_parser(
        "ingest",
        help="store run results in the history store",
        description="Store ReFrame run reports in the history store (SQLite). Without "
        "arguments: every finished run under results/runs not stored yet. "
        "Re-ingesting a run changes nothing. `run` ingests its own results. "
        "Every source given is read and every good run stored; each bad one "
        "is named on its own line and the exit code is then 5.",
        epilog=EPILOG,
    )
    ingest.add_argument(
        "sources",
        nargs="*",
        metavar="RUN_DIR_OR_REPORT",
        help="run directories (results/runs/ID) or ReFrame JSON run reports",
    )
    ingest.set_defaults(func=_ingest)


def _add_verdict_command(sub):
    """`scratchbench verdict nightly|acceptance`."""
    verdict = sub.add_parser(
        "verdict",
        help="nightly or acceptance regression verdicts",
        description="Regression verdicts from the history store.",
        epilog=EPILOG,
    )
    vsub = verdict.add_subparsers(dest="kind", metavar="KIND")
    vsub.required = True
    nightly = vsub.add_parser(
        "nightly",
        help="the latest run against its history",
        description="For each figure of the latest run, look for a change of level in its "
        f"history ({methods.SEGMENTATION} segmentation and a scan of the newest "
        f"runs, z-tests allowing for {methods.CORRELATED_NIGHTS} correlated "
        "nights, critical values calibrated by simulation: at most 1% of "
        "unchanged figures flagged per night). A check of the run that "
        "failed is a verdict of its own, with its cause. Then the suite layer "
        "decides what is notified: each run's common shift is removed (and "
        "tested itself), figures are grouped by check, target, system and "
        "environment, and every group, figure and the run effect share one "
        "budget of 0.1 false notifications a night for the whole suite (about "
        "0.7 a week); an alert is notified once, with every figure it affects. "
        "Exit 1 while a suite alert of a regression lasts (new or ongoing), 4 "
        "when checks failed (and no alert), 7 when the "
        "history store does not exist or holds no run (nothing is judged, "
        "nothing created), 0 otherwise; a verdict file (per-figure verdicts and "
        "the suite's alerts) is written for every judged run.",
    )
    nightly.add_argument("--run", help="judge this run instead of the latest")
    nightly.add_argument("--tag", help="the latest run with this tag (e.g. nightly)")
    nightly.add_argument("--out", help="verdict file (default results/verdicts/nightly-RUN.json)")
    nightly.add_argument(
        "--notify",
        metavar="COMMAND_OR_URL",
        action="append",
        default=[],
        help="told about a new suite alert (a regression, with every figure "
        "it affects) or a failed check: a shell command "
        "($SCRATCHBENCH_VERDICT names the verdict file) or an http(s) "
        "URL that receives a JSON POST (a chat or ticket webhook); "
        "repeatable; a notifier that fails is reported and changes "
        "neither the verdict nor the exit code",
    )
    nightly.set_defaults(func=_verdict)
    accept = vsub.add_parser(
        "acceptance",
        help="runs before a change against runs after it",
        description="Per figure: each run is the median of its repetitions (the run is "
        "the unit, repetitions are not independent samples); the runs before "
        f"and after are compared with {methods.COMPARISON} (on logarithms for "
        f"positive figures): the change, its 95% confidence interval, "
        f"{methods.EFFECT_SIZE} "
        "and p. The figures are judged together: each p is adjusted for their "
        "number (Benjamini-Hochberg), so that an unchanged file system gets a "
        "false better or worse on any figure at most 5% of the time. better or "
        "worse only when the adjusted p < 5% and the change is at least 10% "
        "(and at least 1 percentage point for a share in %; a smaller one, even "
        "if significant, is no change an admin acts on); otherwise no "
        "significant change, with the change these runs "
        "could resolve and how many more runs a side would resolve 10%. Runs "
        "are selected by key:value items joined with commas: tag:, note: "
        "(substring), since:/until: (dates), run: (ids joined with |). Exit 0 "
        "when no figure is worse, 1 when a figure is worse, 3 when too few runs "
        "(fewer than 2 a side) or phases too short to trust decide nothing, 2 "
        "on a selection that matches "
        "no run, 7 when the history store does not exist. reports/VERDICTS.md "
        "has the method.",
    )
    accept.add_argument(
        "--before",
        required=True,
        metavar="SELECTION",
        help="e.g. note:before-upgrade or tag:acceptance,until:2026-11-20",
    )
    accept.add_argument("--after", required=True, metavar="SELECTION")
    accept.add_argument(
        "--out", help="verdict file (default results/verdicts/acceptance-TIME.json)"
    )
    accept.set_defaults(func=_verdict)


def _add_report_command(sub):
    """`scratchbench report`: the pages."""
    report = sub.add_parser(
        "report",
        help="build the static performance pages",
        description="Build static HTML pages (offline, no CDN) from the history store: "
        "file systems, history plots, comparison, runs, advice. Exit 7 (and "
        "nothing created) when the history store does not exist or holds no "
        "figures.",
        epilog=EPILOG,
    )
    report.add_argument(
        "--out",
        default=str(paths.state_dir() / "pages"),
        help="output directory (default $SCRATCHBENCH_HOME/pages)",
    )
    report.set_defaults(func=_report)


def _add_advise_command(sub):
    """`scratchbench advise`: a job's I/O time on each scratch target."""
    advise = sub.add_parser(
        "advise",
        help="how long a job's I/O would take on each scratch target",
        description="Predict a job's I/O time on every scratch target from the history "
        "store: data through each target's self-scaling model (each class "
        "of requests the larger of its bytes' time and its requests' at the "
        "request rate the self-scaling check measured; a log's POSIX and "
        "STDIO traffic, other modules named), metadata (creations, opens, "
        "stats), deletion and staging at the stored rates, each with its "
        "interval over recent runs; beside the data, how far the job lies "
        "outside what the model measured and the error known at that "
        "distance (the model's validation error only inside the measured "
        "range), the regime as measured, and each other environment's (MPI's) "
        "prediction; then the target to use where the intervals allow naming "
        "one. "
        "The job comes from its Darshan log or from a YAML description "
        "(processes, nodes, bytes, read_fraction, request_size, "
        "sequential_fraction, footprint, files, files_written, opens, stats, "
        "stage_in, stage_out; see README.md). Exit 2 on a log or description "
        "it cannot use, 7 when the store has no figures of any target.",
        epilog=EPILOG,
    )
    advise.add_argument(
        "workload",
        metavar="LOG|YAML",
        help="a Darshan log (known by its header, whatever its name) or a "
        "workload description (YAML)",
    )
    advise.add_argument("--json", action="store_true", help="print the prediction as JSON")
    advise.add_argument(
        "--nodes",
        type=int,
        default=None,
        help="a log's job ran on N nodes, N at least 1 (a log does not say; default 1)",
    )
    advise.add_argument(
        "--stage",
        action="store_true",
        help="a log's job stages: the files it only read are staged in, "
        "the files it wrote are staged out",
    )
    advise.set_defaults(func=_advise)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="scratchbench",
        description="Regression and benchmark harness for HPC scratch file systems.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"scratchbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_cluster_command(sub)
    _add_run_command(sub)
    _add_check_site_command(sub)
    _add_ingest_command(sub)
    _add_verdict_command(sub)
    _add_report_command(sub)
    _add_advise_command(sub)
    return parser


def main(argv=None):
    problem = paths.checkout_problem()
    if problem:
        print(f"scratchbench: error: {problem}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ScratchbenchError as exc:
        print(f"scratchbench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except sqlite3.DatabaseError as exc:
        print(
            f"scratchbench: error: history store {paths.history_db()}: {exc}: if it is "
            "damaged, restore it from a backup or save what is readable with `sqlite3 "
            "FILE .recover`",
            file=sys.stderr,
        )
        return 5
    except BrokenPipeError:
        # `scratchbench cluster status | head`: the reader left; that is not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # a full disk or quota anywhere a command writes: one line, not a traceback
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # a copy's error names its source first and the file it wrote second
        written = exc.filename2 or exc.filename
        where = f"{written}: " if written else ""
        print(
            f"scratchbench: error: {where}{exc.strerror}: free some space there and run again",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("scratchbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
