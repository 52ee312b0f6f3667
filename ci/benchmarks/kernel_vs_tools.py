#!/usr/bin/env python3
"""Benchmark (not a test): scratchbench-kernel side by side with fio, IOR and mdtest.

Same directory, same sizes, interleaved rounds (so drift hits every tool alike), the
median of each tool, and the ratios BRIEF section 8 asks for:
  * streaming, direct I/O, 1 MiB transfers, file per process, 1 and 2 ranks:
    kernel >= 0.9 x fio's direct-I/O bandwidth and >= 0.95 x IOR's;
  * metadata (create, open/close, stat, remove; a directory per rank):
    kernel >= 0.95 x mdtest.
IOR and mdtest are used when found (--ior-bin DIR or on PATH); this repository never
builds them.  Prints the figures; exits 0 whatever they are.

    .venv/bin/python ci/benchmarks/kernel_vs_tools.py --dir /var/tmp/sb-bench [--ior-bin DIR]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "reframe_checks" / "lib"))
from parsers import parse_ior_json, parse_mdtest  # noqa: E402

MIB = 2**20
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl": "self,vader", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def sh(cmd, **kw):
    env = dict(os.environ, **OMPI_ENV)
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                            **kw)
    if result.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({result.returncode}): {result.stderr[-500:]}")
    return result.stdout


def mpirun(np):
    return ["mpirun.openmpi", "--oversubscribe", "-np", str(np)]


def kernel_stream(kernel, directory, np, mib):
    # fio and IOR (without -R) do not check the data they read: neither does the kernel
    # here, so all three do the same work.
    out = json.loads(sh(mpirun(np) + [kernel, "iotest", "--dir", directory, "--nr", "131072",
                                      "--nc", str(mib), "--direct", "--iread", "2",
                                      "--no-verify"]))
    s = out["summary"]
    return {"write": s["write"]["bandwidth_min_Bps"]["mean"] / MIB,
            "read": s["read"]["bandwidth_min_Bps"]["mean"] / MIB}


def fio_stream(directory, np, mib):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="fio."))
    try:
        result = {}
        for rw in ("write", "read"):
            out = json.loads(sh(["fio", "--name=bench", f"--directory={work}", f"--rw={rw}",
                                 "--bs=1m", f"--size={mib}m", f"--numjobs={np}", "--direct=1",
                                 "--ioengine=psync", "--end_fsync=1", "--group_reporting",
                                 "--output-format=json"]))
            result[rw] = out["jobs"][0][rw]["bw_bytes"] / MIB
        return result
    finally:
        shutil.rmtree(work)


def ior_stream(ior, directory, np, mib):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="ior."))
    summary = work / "summary.json"
    try:
        sh(mpirun(np) + [ior, "-a", "POSIX", "--posix.odirect", "-F", "-t", "1m", "-b",
                         f"{mib}m", "-w", "-r", "-e", "-i", "1", "-o", work / "file",
                         "-O", "summaryFormat=JSON", "-O", f"summaryFile={summary}"])
        ops = parse_ior_json(summary.read_text())["operations"]
        return {"write": ops["write"]["bw_mean"], "read": ops["read"]["bw_mean"]}
    finally:
        shutil.rmtree(work)


def kernel_metadata(kernel, directory, np, files):
    out = json.loads(sh(mpirun(np) + [kernel, "metadata", "--dir", directory, "--files",
                                      str(files), "--dir-per-rank"]))
    s = out["summary"]
    return {p: s[p]["rate_ops"]["mean"] for p in ("create", "open", "stat", "remove")}


def mdtest_metadata(mdtest, directory, np, files):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="mdtest."))
    try:
        rates = parse_mdtest(sh(mpirun(np) + [mdtest, "-n", str(files), "-F", "-u", "-N", "1",
                                              "-d", work / "md"]))["rate"]
        return {"create": rates["file_creation"]["mean"], "open": rates["file_read"]["mean"],
                "stat": rates["file_stat"]["mean"], "remove": rates["file_removal"]["mean"]}
    finally:
        shutil.rmtree(work)


def rounds(n, tools):
    """Interleave: round r runs every tool once, in an order that rotates."""
    samples = {name: [] for name in tools}
    names = list(tools)
    for r in range(n):
        for name in names[r % len(names):] + names[:r % len(names)]:
            samples[name].append(tools[name]())
    return {name: {k: statistics.median(s[k] for s in runs) for k in runs[0]}
            for name, runs in samples.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/var/tmp/sb-bench", help="directory on the file "
                        "system to measure (created if missing)")
    parser.add_argument("--mib", type=int, default=512, help="MiB per rank (default 512)")
    parser.add_argument("--files", type=int, default=2048, help="files per rank (default 2048)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ior-bin", help="directory holding ior and mdtest")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="sbk-bench-"))
    sh(["make", "-C", REPO / "src", "MPICC=mpicc.openmpi", f"BUILD={build}"])
    kernel = build / "scratchbench-kernel"
    ior = shutil.which("ior", path=args.ior_bin) if args.ior_bin else shutil.which("ior")
    mdtest = shutil.which("mdtest", path=args.ior_bin) if args.ior_bin else shutil.which("mdtest")
    print(f"directory {args.dir}; {args.mib} MiB per rank, 1 MiB direct I/O; {args.files} "
          f"files per rank; median of {args.rounds} interleaved rounds")
    if not ior:
        print("IOR/mdtest not found (give --ior-bin DIR): their ratios are not measured")
    for np in (1, 2):
        tools = {"kernel": lambda np=np: kernel_stream(kernel, args.dir, np, args.mib),
                 "fio": lambda np=np: fio_stream(args.dir, np, args.mib)}
        if ior:
            tools["ior"] = lambda np=np: ior_stream(ior, args.dir, np, args.mib)
        med = rounds(args.rounds, tools)
        for op in ("write", "read"):
            line = (f"{np} rank(s) {op:<5}: kernel {med['kernel'][op]:8.0f} MiB/s, "
                    f"fio {med['fio'][op]:8.0f} MiB/s, kernel/fio {med['kernel'][op] / med['fio'][op]:.2f} "
                    "(target >= 0.9)")
            if ior:
                line += (f"; IOR {med['ior'][op]:8.0f} MiB/s, kernel/IOR "
                         f"{med['kernel'][op] / med['ior'][op]:.2f} (target >= 0.95)")
            print(line)
    if mdtest:
        for np in (1, 2):
            med = rounds(args.rounds, {
                "kernel": lambda np=np: kernel_metadata(kernel, args.dir, np, args.files),
                "mdtest": lambda np=np: mdtest_metadata(mdtest, args.dir, np, args.files)})
            for phase in ("create", "open", "stat", "remove"):
                print(f"{np} rank(s) {phase:<6}: kernel {med['kernel'][phase]:10.0f} ops/s, "
                      f"mdtest {med['mdtest'][phase]:10.0f} ops/s, kernel/mdtest "
                      f"{med['kernel'][phase] / med['mdtest'][phase]:.2f} (target >= 0.95)")
    shutil.rmtree(build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
