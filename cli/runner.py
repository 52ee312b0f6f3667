"""`scratchbench run`: one tag of the suite on one site, through ReFrame.

Each run gets its own directory ``results/runs/<run id>/`` holding ReFrame's JSON run
report, the job outputs, the stage directory and ``run.json`` (site, tag, revision,
note), so no run overwrites another.  Perflogs and ReFrame's results DB are shared
and append-only.
"""

import json
import os
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from cli.housekeeping import RunLock, cancel_jobs, interrupted_runs, jobs_of_runs, mark_interrupted
from reports import runreport
from scratchbench import paths
from scratchbench.errors import ClusterError, ConfigError, RunError, ScratchbenchError
from scratchbench.sites import TAGS, load_site_config, resolve_site_config, scratch_targets

LMOD_CMD = "/usr/share/lmod/lmod/libexec/lmod"
EMBEDDED_SYSTEM = "embedded"
# The same machine through ReFrame's local scheduler, when Slurm cannot start.
FALLBACK_SYSTEM = "embedded-local"


def progress(message):
    print(f"scratchbench: {message}", file=sys.stderr, flush=True)


def git_revision():
    try:
        rev = subprocess.run(
            ["git", "-C", str(paths.REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(paths.REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (rev or "unknown") + ("-dirty" if dirty else "")


def new_run_dir(kind="runs"):
    """results/<kind>/<UTC timestamp>[-N]: never an existing directory."""
    runs = paths.results_dir() / kind
    runs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        candidate = runs / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise RunError(f"cannot make a new run directory under {runs}")


def choose_system(config, site_path, partition, name=None):
    """The ReFrame --system value: 'system' or 'system:partition', validated."""
    systems = config["systems"]
    system = next((s for s in systems if s["name"] == name), systems[0])
    if partition:
        parts = [p["name"] for p in system["partitions"]]
        if partition not in parts:
            raise ConfigError(
                f"site config {site_path}: system '{system['name']}' has no "
                f"partition '{partition}' (it has: {', '.join(parts)})"
            )
        return f"{system['name']}:{partition}"
    return system["name"]


def environ_option(config, site_path, system, environ):
    """ReFrame's -p for one programming environment the chosen partitions declare."""
    name, _, partition = system.partition(":")
    chosen = next(s for s in config["systems"] if s["name"] == name)["partitions"]
    declared = sorted(
        {e for p in chosen if partition in ("", p["name"]) for e in p.get("environs", ())}
    )
    if environ not in declared:
        raise ConfigError(
            f"--environ {environ}: site config {site_path} declares no such "
            f"programming environment on {system} (it has: "
            f"{', '.join(declared)})"
        )
    return ["-p", f"^{environ}$"]


def check_targets(config, site_path, system, target):
    targets = scratch_targets(config, system.split(":")[0])
    declared = sorted({name for per_part in targets.values() for name in per_part})
    if not declared:
        raise ConfigError(
            f"site config {site_path}: declares no scratch targets; add "
            "ScratchTarget entries with with_scratch_targets()"
        )
    if target and target not in declared:
        raise ConfigError(
            f"--target {target}: site config {site_path} declares no such "
            f"scratch target (it has: {', '.join(declared)})"
        )


def ensure_embedded_cluster(start):
    """For the local site: the cluster's SLURM_CONF, starting the cluster if asked."""
    from cluster import EmbeddedCluster

    cluster = EmbeddedCluster(paths.cluster_dir())
    status = cluster.status()
    if not status["up"]:
        if not start:
            raise RunError(
                "the embedded cluster is not running: start it with `scratchbench cluster up`"
            )
        progress("the embedded cluster is not running; starting it")
        cluster.up(cluster.recorded_spec())
    else:
        cluster.trim_san()  # (up trims as it mounts the disks)
    return str(cluster.slurm_conf)


def reframe_env(slurm_conf=None):
    env = dict(os.environ)
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    # The fallback system's scratch target: a directory of this machine.
    local_scratch = paths.state_dir() / "localscratch"
    local_scratch.mkdir(parents=True, exist_ok=True)
    env.setdefault("SCRATCHBENCH_LOCAL_SCRATCH", str(local_scratch))
    if "LMOD_CMD" not in env and Path(LMOD_CMD).exists():
        env["LMOD_CMD"] = LMOD_CMD  # ReFrame's Lmod backend needs it; Debian's path
    env.setdefault("SCRATCHBENCH_HOME", str(paths.state_dir()))
    # Per-site references (ReFrame's $ref files) live with the site configs.
    env.setdefault("RFM_REFERENCE_PREFIX", str(paths.SITE_CONFIGS_DIR / "references"))
    return env


def modules_not_found(config, system, env):
    """The modules of the system's environments that Lmod cannot find, as
    (environment, module) pairs, looked up once each before ReFrame starts.

    A site that turns ReFrame's ``resolve_module_conflicts`` off saves ReFrame's Lmod
    calls in its own process before every job script (0.7 s a check here), but then a
    module that does not exist is found only by the job, in Lmod's words cut short.
    So a run of such a site that finds a missing module turns the resolution back on
    for itself (``RFM_RESOLVE_MODULE_CONFLICTS``), and ReFrame names the module in
    each check that uses it before any job runs."""
    name, _, partition = system.partition(":")
    chosen = next(s for s in config["systems"] if s["name"] == name)
    if chosen.get("modules_system", "nomod") != "lmod" or not env.get("LMOD_CMD"):
        return []
    used = {e for p in chosen["partitions"] if partition in ("", p["name"]) for e in p["environs"]}
    missing = []
    for environ in config.get("environments", []):
        systems = environ.get("target_systems", ["*"])
        if environ["name"] not in used or not ({"*", name} & set(systems)):
            continue
        environ_env = dict(env)
        variables = environ.get("env_vars", [])  # ReFrame sets them before its module loads
        for key, value in variables.items() if isinstance(variables, dict) else variables:
            environ_env[key] = _expand(str(value), environ_env)
        for module_name, module_path in _modules_of(environ):
            lookup_env = dict(environ_env)
            if module_path:
                lookup_env["MODULEPATH"] = ":".join(
                    filter(None, [module_path, environ_env.get("MODULEPATH")])
                )
            found = subprocess.run(
                [env["LMOD_CMD"], "bash", "is-avail", module_name],
                env=lookup_env,
                capture_output=True,
                check=False,
            )
            if found.returncode != 0:
                missing.append((environ["name"], module_name))
    return missing


def _modules_of(environ):
    """(name, path or None) of each module an environment loads: its own and the one
    of its IOR route (extras 'ior': 'module:NAME')."""
    for module in environ.get("modules", []):
        module = module if isinstance(module, dict) else {"name": module}
        yield module["name"], module.get("path")
    route = str(environ.get("extras", {}).get("ior", ""))
    if route.startswith("module:"):
        yield route.removeprefix("module:"), None


def _expand(value, variables):
    """$NAME and ${NAME} of value from variables (os.path.expandvars reads os.environ)."""
    return string.Template(value).safe_substitute(variables)


def resolve_missing_modules(config, system, env):
    """Turn ReFrame's module conflict resolution on for this run when the site turned
    it off and a module of its environments cannot be found (see modules_not_found)."""
    name = system.split(":")[0]
    general = [
        g for g in config.get("general", []) if {"*", name} & set(g.get("target_systems", ["*"]))
    ]
    if next(
        (g["resolve_module_conflicts"] for g in general if "resolve_module_conflicts" in g), True
    ):
        return
    missing = modules_not_found(config, system, env)
    if missing:
        named = ", ".join(f"{module} (environment {environ})" for environ, module in missing)
        progress(
            f"warning: Lmod cannot find {named}: ReFrame looks each module up before "
            "every job of this run, to name it in each check that uses it"
        )
        env["RFM_RESOLVE_MODULE_CONFLICTS"] = "y"


def spack_env_option(path):
    """ReFrame's arguments that point the IOR provider at a Spack environment file."""
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise ConfigError(
            f"--spack-env {path}: no such file (expected a Spack environment file, spack.yaml)"
        )
    if not os.access(full, os.R_OK):
        raise ConfigError(f"--spack-env {path}: not readable by this user")
    return ["-S", f"IORProvider.spack_env_file={full}"]


def run_suite(
    tag,
    site="local",
    partition=None,
    target=None,
    names=(),
    note="",
    start_cluster=True,
    extra_args=(),
    stream=None,
    local=False,
    spack_env=None,
    checks_tag=None,
    environ=None,
):
    """Run one tag of the suite; returns (exit code, summary dict).  ``checks_tag``
    selects other checks than the tag's (check-site's), with the tag's workloads; their
    runs go to results/<checks_tag>-checks/, outside the suite's history."""
    if tag not in TAGS:
        raise ConfigError(f"--tag {tag}: expected one of {', '.join(TAGS)}")
    if spack_env:
        extra_args = list(extra_args) + spack_env_option(spack_env)
    site_path = resolve_site_config(site)
    config = load_site_config(site_path)
    system = choose_system(config, site_path, partition)
    check_targets(config, site_path, system, target)
    if environ:
        extra_args = list(extra_args) + environ_option(config, site_path, system, environ)
    # The embedded cluster's system (site_configs/local.py and copies of it).
    site_is_local = system.split(":")[0] == EMBEDDED_SYSTEM
    slurm_conf, fallback = None, None
    if site_is_local and local:
        fallback = "asked for with --local"
    elif site_is_local:
        try:
            slurm_conf = ensure_embedded_cluster(start_cluster)
        except ClusterError as exc:
            if not start_cluster:
                raise
            fallback = f"the embedded Slurm cluster cannot start: {exc}"
    elif local:
        raise ConfigError(
            f"--local: site config {site_path} has no '{FALLBACK_SYSTEM}' "
            "system; it is for the local site"
        )
    if fallback:
        progress(
            f"warning: {fallback}; running on this machine through ReFrame's local "
            "scheduler instead: no exclusive nodes, no per-job scratch directory"
        )
        system = choose_system(config, site_path, None, name=FALLBACK_SYSTEM)
        check_targets(config, site_path, system, target)

    lock = RunLock(site_path).acquire("starting")
    try:
        run_dir = new_run_dir(f"{checks_tag}-checks" if checks_tag else "runs")
        lock.acquire_for(run_dir.name)
        notes = recover_interrupted_runs(slurm_conf, lock)
        code, summary = _run_reframe(
            run_dir,
            tag,
            site_path,
            config,
            system,
            target,
            names,
            note,
            fallback,
            slurm_conf,
            extra_args,
            stream,
            checks_tag or tag,
        )
    finally:
        lock.release()
    summary["notes"] = notes + summary.get("notes", [])
    return code, summary


def recover_interrupted_runs(slurm_conf, lock):
    """Pick up after runs of this state directory that were killed: cancel the jobs
    they left in the queue, store what their run report holds, and say what is lost."""
    notes = []
    if lock.took_over:
        notes.append(
            f"took over the run lock left by run {lock.took_over.get('run_id')} "
            f"(pid {lock.took_over.get('pid')}, started {lock.took_over.get('since')}), "
            "whose process is gone"
        )
    env = dict(os.environ, **({"SLURM_CONF": slurm_conf} if slurm_conf else {}))
    for run_dir, meta in interrupted_runs(paths.results_dir() / "runs"):
        left = jobs_of_runs({run_dir.name}, env) if slurm_conf else {}
        cancel_jobs(list(left), env)
        report = run_dir / "report.json"
        if report.is_file():
            from reports import commands

            try:
                _, figures, _ = commands.ingest([run_dir])
                cases = runreport.final_cases(json.loads(report.read_text()))
            except (ScratchbenchError, ValueError) as exc:
                what = f"its run report could not be stored ({exc})"
            else:
                unfinished = [
                    case_in_words(c)
                    for c in cases
                    if c.get("result") not in ("pass", "xfail", *runreport.NOT_RUN)
                ]
                what = (
                    f"stored {figures} figures of it; {len(unfinished)} case(s) did not "
                    f"finish" + (f": {'; '.join(unfinished[:5])}" if unfinished else "")
                )
        else:
            what = (
                "ReFrame wrote no run report, so none of its figures could be stored; its "
                f"job outputs are in {run_dir / 'stage'}"
            )
        if left:
            what += f"; cancelled its job(s) still in the queue: {', '.join(sorted(left))}"
        mark_interrupted(run_dir, meta, what)
        notes.append(f"run {run_dir.name} (started {meta.get('started')}) was interrupted: {what}")
        progress(notes[-1])
    return notes


def _run_reframe(
    run_dir,
    tag,
    site_path,
    config,
    system,
    target,
    names,
    note,
    fallback,
    slurm_conf,
    extra_args,
    stream,
    checks_tag,
):
    report = run_dir / "report.json"
    revision = git_revision()
    meta = _run_meta(run_dir, tag, site_path, config, system, target, note, fallback, revision)
    (run_dir / "run.json").write_text(json.dumps(meta, indent=2) + "\n")

    cmd = _reframe_command(
        run_dir, tag, site_path, system, target, names, extra_args, checks_tag, revision, report
    )
    (run_dir / "command.txt").write_text(" ".join(cmd) + "\n")

    log_path = run_dir / "reframe.out"
    progress(
        f"running the '{checks_tag}' checks on {system} with ReFrame; output also in {log_path}"
    )
    t0 = time.monotonic()
    out = stream or sys.stdout
    env = reframe_env(slurm_conf)
    env["SCRATCHBENCH_RUN_ID"] = run_dir.name
    env["SCRATCHBENCH_REFRAME_LOG"] = str(run_dir / "reframe.log")
    resolve_missing_modules(config, system, env)
    rc, signalled, log_error = _stream_reframe(cmd, env, run_dir, log_path, out)
    wall = time.monotonic() - t0
    meta["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    meta["wall_seconds"] = round(wall, 1)
    meta["reframe_exit_code"] = rc
    if signalled:
        meta["interrupted"] = meta["finished"]
        meta["interrupted_what"] = f"stopped by signal {signalled[0]}"
    (run_dir / "run.json").write_text(json.dumps(meta, indent=2) + "\n")
    notes = []
    if log_error:
        notes.append(
            f"{log_path} holds only ReFrame's output up to where writing it failed "
            f"({log_error}); the rest was printed here only"
        )
    if slurm_conf:
        left = jobs_of_runs({run_dir.name}, env)
        if left:
            cancel_jobs(list(left), env)
            notes.append(
                f"cancelled {len(left)} job(s) this run left in the queue: "
                f"{', '.join(sorted(left))}"
            )
    data = read_run_report(report, rc, log_path)
    summary = summarise_report(data)
    summary["site_lines"] = site_check_lines(data)
    summary.update(
        run_dir=str(run_dir),
        report=str(report),
        wall_seconds=round(wall, 1),
        fallback=fallback,
        notes=notes,
        perflogs=str(paths.results_dir() / "perflogs"),
        output=str(run_dir / "output"),
        results_db=str(paths.results_dir() / "results.db"),
        reframe_exit_code=rc,
    )
    if signalled:
        summary["notes"].append(
            f"interrupted by signal {signalled[0]}: the cases above that "
            "did not finish are reported as failed"
        )
        return 128 + signalled[0], summary
    return (0 if rc == 0 and summary["failed"] == 0 else 1), summary


def read_run_report(report, rc, log_path):
    """ReFrame's run report, or one error saying why there is none to read: not written,
    or cut short (a full disk leaves it empty)."""
    if not report.exists():
        raise RunError(f"ReFrame exited {rc} without writing a run report; see {log_path}")
    try:
        return json.loads(report.read_text())
    except (OSError, ValueError) as exc:
        free = shutil.disk_usage(report.parent).free
        raise RunError(
            f"ReFrame exited {rc} and its run report {report} cannot be read ({exc}; "
            f"{free >> 20} MiB free there); see {log_path}"
        ) from None


def _run_meta(run_dir, tag, site_path, config, system, target, note, fallback, revision):
    """The run's run.json: what runs where, from which revision, by which process."""
    partitions = {
        p["name"]: {
            "scheduler": p["scheduler"],
            "access": p.get("access", []),
            "descr": p.get("descr", ""),
        }
        for s in config["systems"]
        if s["name"] == system.split(":")[0]
        for p in s["partitions"]
    }
    meta = {
        "run_id": run_dir.name,
        "site": str(site_path),
        "system": system,
        "tag": tag,
        "target": target,
        "note": note,
        "revision": revision,
        "partitions": partitions,
        "scheduler_fallback": fallback,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    return meta


def _reframe_command(
    run_dir, tag, site_path, system, target, names, extra_args, checks_tag, revision, report
):
    """ReFrame's command line for the run: the checks of checks_tag (of one target and
    of the names given, when given), the run's directories and its run report."""
    reframe = shutil.which("reframe") or str(Path(sys.executable).parent / "reframe")
    cmd = [
        reframe,
        "-C",
        str(site_path),
        "-c",
        str(paths.CHECKS_DIR),
        "--system",
        system,
        "-t",
        f"^{checks_tag}$",
        "-S",
        f"workload_tag={tag}",
        "-r",
        "--warn-as-error",
        "--prefix",
        str(paths.results_dir()),
        "-o",
        str(run_dir / "output"),
        "-s",
        str(run_dir / "stage"),
        "--report-file",
        str(report),
        "--session-extras",
        f"scratchbench_run={run_dir.name},tag={tag},revision={revision}",
    ]
    if target:
        cmd += ["-t", f"^fs:{target}$"]
    for name in names:
        cmd += ["-n", name]
    cmd += list(extra_args)
    return cmd


def _stream_reframe(cmd, env, run_dir, log_path, out):
    """Run ReFrame, its output to the log and to out; a SIGTERM or SIGINT meanwhile is
    passed on as a SIGTERM (ReFrame then cancels its jobs and writes its run report).
    A log that can no longer be written (a full disk) is left as it is and the output
    still goes to out: the run is not lost with it.  Returns (its exit code, [the
    signals received], why the log stopped being written or None)."""
    signalled = []
    try:
        # a line at a time: `tail -f` shows progress, and a full disk shows at once
        log = open(log_path, "w", buffering=1)
    except OSError as exc:
        raise RunError(
            f"{log_path}: cannot write ReFrame's output there ({exc.strerror})"
        ) from None
    log_error = None
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=str(run_dir),
        )
    except BaseException:
        log.close()
        raise

    def stop_reframe(signum, _frame):
        # ReFrame cancels its jobs and writes its run report on SIGTERM: let it.
        signalled.append(signum)
        progress(
            f"received signal {signum}: stopping ReFrame, which cancels its jobs "
            "and writes what finished"
        )
        proc.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop_reframe) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for line in proc.stdout:
            if log_error is None:
                try:
                    log.write(line)
                except OSError as exc:
                    log_error = exc.strerror or str(exc)
                    progress(
                        f"warning: cannot write {log_path} any more ({log_error}): "
                        "ReFrame's output goes on here only"
                    )
            out.write(line)
        rc = proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        try:
            log.close()
        except OSError as exc:  # what was still buffered when the disk filled
            log_error = log_error or exc.strerror or str(exc)
    return rc, signalled, log_error


def summarise_report(report):
    """Counts, figures and skip and failure reasons of a ReFrame run report."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    figures, skipped, failures = [], [], []
    cases = [c for c in runreport.final_cases(report)]
    # a failed dependency prints its own FAILED line with the cause
    reasons = runreport.skip_reasons(cases, with_failed_cause=False)
    for index, case in enumerate(cases):
        result = case.get("result")
        name = case_in_words(case)
        if result in ("pass", "xfail"):
            counts["passed"] += 1
        elif result in runreport.NOT_RUN:  # counted as ReFrame counts them
            counts["skipped"] += 1
            skipped.append((name, reasons[index]))
        else:
            counts["failed"] += 1
            failures.append((name, case.get("fail_phase"), runreport.failure_in_words(case)))
        for metric, value, unit, *_ in runreport.perf_figures(case):
            if value is None:
                continue  # a failed case: its cause is printed, not empty figures
            figures.append(
                {
                    "case": name,
                    "environ": case.get("environ"),
                    "partition": case.get("partition"),
                    "variable": metric,
                    "value": value,
                    "unit": unit or "",
                }
            )
    return dict(counts, figures=figures, skipped_cases=skipped, failed_cases=failures)


def site_check_lines(report):
    """check-site's answer: one line per case that ran or should have, what it found
    or why not (fixtures only when they failed: their cause is the one to fix)."""
    cases = runreport.final_cases(report)
    reasons = runreport.skip_reasons(cases, with_failed_cause=False)
    lines = []
    for index, case in enumerate(cases):
        result = case.get("result")
        if case.get("fixture") and result in ("pass", *runreport.NOT_RUN):
            continue
        where = f"[{case.get('partition')} {case.get('environ')}]"
        what = " ".join(
            filter(None, (runreport.check_name(case), case.get("scratch_target"), where))
        )
        if result == "pass":
            lines.append(f"ok     {what}: {case.get('found') or 'passed'}")
        elif result in runreport.NOT_RUN:
            lines.append(f"skip   {what}: {reasons[index]}")
        else:
            cause = runreport.failure_in_words(case)
            if "could not execute module operation" in cause:
                cause += (
                    "; fix: the module's name, or its path, in the environment's "
                    "'modules' in the site config"
                )
            lines.append(f"FAIL   {what} ({case.get('fail_phase')}): {cause}")
    return lines


def case_in_words(case):
    """'KernelIOTest on sanscratch (file per process, POSIX) [gnu-openmpi]'."""
    parts = [runreport.check_name(case)]
    if case.get("scratch_target"):
        parts.append(f"on {case['scratch_target']}")
    if case.get("variant_words"):
        parts.append(f"({case['variant_words']})")
    where = case.get("environ") or ""
    if case.get("fixture"):
        where = f"{case.get('system')}:{case.get('partition')}+{where}"
    return " ".join(parts) + (f" [{where}]" if where else "")


def format_summary(summary):
    lines = []
    if summary["figures"]:
        lines.append("Figures (one line per test case):")
        by_case = {}
        for f in summary["figures"]:
            by_case.setdefault(f["case"], []).append(f)
        for name, figs in by_case.items():
            shown = ", ".join(f"{f['variable']} {_number(f['value'])} {f['unit']}" for f in figs)
            lines.append(f"  {name}: {shown}")
    by_reason = {}
    for name, reason in summary["skipped_cases"]:
        by_reason.setdefault(reason, []).append(name)
    for reason, names in by_reason.items():
        shown = "; ".join(sorted(set(names))[:3]) + (" ..." if len(set(names)) > 3 else "")
        lines.append(f"skipped ({len(names)}): {reason}: {shown}")
    for name, phase, reason in summary["failed_cases"]:
        lines.append(f"FAILED:  {name} ({phase}): {reason}")
    for note in summary.get("notes", []):
        lines.append(f"note:         {note}")
    if summary.get("fallback"):
        lines.append(f"scheduler:    ReFrame's local scheduler ({summary['fallback']})")
    lines += [
        f"run report:   {summary['report']}",
        f"job outputs:  {summary['output']}",
        f"perflogs:     {summary['perflogs']}",
        f"results DB:   {summary['results_db']}",
        f"wall time:    {summary['wall_seconds']} s",
    ]
    if summary.get("history"):
        lines.append(f"history:      {summary['history']}")
    lines += [
        f"{summary['passed']} passed, {summary['failed']} failed, {summary['skipped']} skipped",
    ]
    return "\n".join(lines)


def _number(value):
    if isinstance(value, (int, float)):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


__all__ = ["run_suite", "format_summary", "summarise_report", "ScratchbenchError"]
