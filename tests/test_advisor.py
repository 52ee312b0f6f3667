"""The workload advisor: profiles from real Darshan logs (the ones PyDarshan's wheel
ships), checked against PyDarshan's own reports; workload descriptions and their
errors; predictions from a history whose answers are known; the command; the page in a
real Chromium."""

import dataclasses
import json
import os
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from conftest import REPO, VENV_BIN, launch_chromium
from reframe_checks.lib.selfscale import declared_figures
from reports import advisor, advisor_report, job_profile, pages, store
from reports.synthetic import make_case, make_report
from scratchbench import selfscale as ss
from scratchbench import units
from scratchbench.figures import DESCRIPTIVE_ROLES, too_short_words

darshan = pytest.importorskip("darshan")
DARSHAN_DIR = Path(darshan.__file__).parent
EXAMPLES = DARSHAN_DIR / "examples" / "example_logs"
TEST_INPUT = DARSHAN_DIR / "tests" / "input"
WITH_POSIX = [
    EXAMPLES / "example.darshan",
    EXAMPLES / "dxt.darshan",
    EXAMPLES / "ior_hdf5_example.darshan",
    EXAMPLES / "sample-badost.darshan",
    EXAMPLES / "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan",
    TEST_INPUT / "sample-goodost.darshan",
    TEST_INPUT / "sample-dxt-simple.darshan",
    TEST_INPUT / "noposixopens.darshan",
]
ARTIFACTS = REPO / "var" / "test-artifacts"
KIB, MIB, GIB = ss.KIB, ss.MIB, ss.GIB
DAY = 86400
START = 1_800_000_000


def run_cli(*args, env=None):
    full = dict(os.environ, **(env or {}))
    return subprocess.run(
        [str(VENV_BIN / "scratchbench"), *map(str, args)],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
    )


# ---- profiles of real logs -------------------------------------------------------------------
def pydarshan_reports(path):
    """What PyDarshan itself says about a log: darshan-util's derived metrics (the
    numbers of its job summary) of POSIX and of STDIO, and its experimental aggregator
    of request counts."""
    import warnings

    warnings.simplefilter("ignore")
    from darshan.backend.cffi_backend import accumulate_records

    darshan.enable_experimental()
    # Closed here, not by the garbage collector: a report's __del__ that runs while cffi
    # parses a type for the next one takes cffi's lock twice, and the test hangs.
    with darshan.DarshanReport(str(path), read_all=True) as report:
        nprocs = report.metadata["job"]["nprocs"]
        metrics = {
            m: accumulate_records(report.records[m].to_df(), m, nprocs).derived_metrics
            for m in ("POSIX", "STDIO")
            if m in report.records and len(report.records[m])
        }
        return nprocs, metrics, report.agg_ioops(mode="dict")


@pytest.mark.parametrize(
    "path", WITH_POSIX + [TEST_INPUT / "noposix.darshan"], ids=lambda p: p.name[:30]
)
def test_profile_of_a_shipped_log_matches_pydarshans_own_reports(path):
    """POSIX and STDIO together: each byte, request and open the job made through
    either; the histogram and stats are POSIX's (STDIO records neither)."""
    profile = job_profile.load_profile(path)
    nprocs, metrics, ioops = pydarshan_reports(path)

    def both(field, category=0):
        return sum(getattr(m.category_counters[category], field) for m in metrics.values())

    assert profile.processes == nprocs
    assert profile.bytes_read == both("total_read_volume_bytes")
    assert profile.bytes_written == both("total_write_volume_bytes")
    assert profile.bytes_read + profile.bytes_written == sum(
        m.total_bytes for m in metrics.values()
    )
    # a file may be in both modules: counted once
    assert (
        max(m.category_counters[0].count for m in metrics.values())
        <= profile.files
        <= both("count")
    )
    slowest = [m.agg_time_by_slowest for m in metrics.values()]
    assert max(slowest) * (1 - 1e-9) <= profile.observed_io_s <= sum(slowest) * (1 + 1e-9)
    posix, stdio = ioops.get("POSIX", {}), ioops.get("STDIO", {})
    for field in ("READS", "WRITES", "OPENS"):
        assert getattr(profile, field.lower()) == posix.get(f"POSIX_{field}", 0) + stdio.get(
            f"STDIO_{field}", 0
        ), field
    assert profile.stats == posix.get("POSIX_STATS", 0)
    for direction in ("read", "write"):
        for name, _, _ in job_profile.DARSHAN_BINS:
            assert profile.histogram[direction][name] == posix.get(
                f"POSIX_SIZE_{direction.upper()}_{name}", 0
            ), (direction, name)
        classes = profile.size_classes[direction]
        moved = profile.bytes_read if direction == "read" else profile.bytes_written
        assert sum(b for _, b in classes) == pytest.approx(moved, rel=1e-9)
    for module, figures in metrics.items():
        entry = profile.modules[module]
        assert entry["counted"] == "counted"
        assert entry["bytes_read"] == figures.category_counters[0].total_read_volume_bytes
    # bytes touched: darshan-util sums each file's largest offset + 1; the profile leaves
    # out files that moved no data (at most a byte each there)
    spans = both("total_max_offset_bytes") + both("count")
    assert 0 <= spans - profile.unique_bytes <= both("count")


def test_an_ior_log_gives_the_workload_its_command_line_says():
    """sample-goodost.darshan: `ior -t 8m -b 256m -s 4 -F -C -e -a POSIX -w -k` on 48
    processes: a file per process, 1 GiB each, 8 MiB writes, all consecutive."""
    profile = job_profile.load_profile(TEST_INPUT / "sample-goodost.darshan")
    posix = profile.modules["POSIX"]
    assert posix["bytes_written"] == 48 * GIB and posix["bytes_read"] == 0
    # and IOR's own output through STDIO: 1,584 bytes in 95 writes to stdout and stderr
    assert profile.modules["STDIO"]["bytes_written"] == 1584
    assert (profile.processes, profile.files, profile.files_written) == (48, 50, 49)
    assert profile.bytes_written == 48 * GIB + 1584 and profile.bytes_read == 0
    assert profile.writes == 48 * 4 * 256 // 8 + 95
    assert profile.size_classes["write"][-1] == [8 * MIB, 48 * GIB]
    assert profile.consecutive["write"] == 1.0
    assert profile.outputs == {"bytes": 48 * GIB + 1584, "files": 49}
    assert 0 < profile.observed_io_s < profile.run_time_s


def test_a_log_of_stdio_traffic_alone_is_predicted_from_it(known_history):
    """noposix.darshan: 512 processes read 1.69 GiB and write 28 MiB through STDIO only
    (PyDarshan's own numbers are checked above); before, it was refused as 'no POSIX'."""
    _, db = known_history
    profile = job_profile.load_profile(TEST_INPUT / "noposix.darshan")
    assert profile.bytes_read == 1812408359 and profile.bytes_written == 29562779
    assert (profile.reads, profile.writes) == (199687, 2190437)
    assert profile.modules["STDIO"]["counted"] == "counted"
    assert profile.modules["LUSTRE"]["counted"] == "no data traffic"
    assert "1.69 GiB read in 199,687 requests" in profile.words()
    data = advisor.predict_target(profile, advisor.load_figures(db_path=db)["fastfs"])
    assert data["parts"]["data"]["seconds"] > 0


@pytest.mark.parametrize(
    "log, keep, missing, read",
    [
        (TEST_INPUT / "sample-goodost.darshan", 9500, "LUSTRE, STDIO", "POSIX (48 GiB)"),
        (TEST_INPUT / "sample-goodost.darshan", 10700, "STDIO", "POSIX (48 GiB)"),
        # cut in its DXT traces, which the advisor does not read: the header says so
        (
            EXAMPLES / "ior_hdf5_example.darshan",
            3500,
            "DXT_MPIIO",
            "POSIX (8.01 MiB), STDIO (2.36 KiB)",
        ),
    ],
)
def test_a_log_cut_short_after_its_data_says_so_and_what_was_read(
    tmp_path, log, keep, missing, read
):
    cut = tmp_path / "cut.darshan"
    whole = log.read_bytes()
    cut.write_bytes(whole[:keep])
    profile = job_profile.load_profile(cut)
    assert profile.notes[0] == (
        f"the log is cut short or damaged: its header says "
        f"{len(whole):,} bytes, the file has {keep:,}: the {missing} "
        f"records are missing; the profile is what was still read: "
        f"{read}"
    )
    assert (
        profile.modules["POSIX"]["bytes_written"]
        == job_profile.load_profile(log).modules["POSIX"]["bytes_written"]
    )


def test_no_shipped_log_is_said_to_be_cut_short():
    for log in WITH_POSIX + [TEST_INPUT / "noposix.darshan"]:
        assert not any("cut short" in n for n in job_profile.load_profile(log).notes), log


def test_layered_modules_are_counted_once_and_named():
    """ior_hdf5_example.darshan: IOR through HDF5 over MPI-IO over POSIX: the bytes are
    POSIX's (and IOR's STDIO output), not three times over."""
    profile = job_profile.load_profile(EXAMPLES / "ior_hdf5_example.darshan")
    modules = profile.modules
    assert (
        profile.bytes_written
        == modules["POSIX"]["bytes_written"] + modules["STDIO"]["bytes_written"]
    )
    assert {n for n, m in modules.items() if m["counted"] == "in POSIX"} == {"MPI-IO", "H5F", "H5D"}
    assert {n for n, m in modules.items() if m["counted"] == "no data traffic"} == {
        "LUSTRE",
        "DXT_POSIX",
        "DXT_MPIIO",
    }
    assert (
        "MPI-IO, H5F, H5D traffic is counted once, in POSIX's counters beneath it" in profile.notes
    )
    assert all(m["partial"] is False for m in modules.values())


def test_traffic_the_suite_does_not_model_is_named_with_its_volume():
    """No shipped log has DFS records; the notes come from a log's module table, so
    this one is the modules PyDarshan read from a real log with a DFS entry added."""
    profile = job_profile.load_profile(EXAMPLES / "ior_hdf5_example.darshan")
    modules = dict(
        profile.modules,
        DFS={
            "bytes_read": 8 * MIB,
            "bytes_written": 8 * MIB,
            "counted": "not predicted",
            "partial": True,
        },
    )
    notes = job_profile.module_notes(modules)
    assert (
        "16 MiB read and written through DFS (DAOS) is not predicted (the suite "
        "measures no such target)" in notes
    )
    assert (
        "Darshan's DFS module ran out of record memory in this job: some of its "
        "files are not in the log, so its counts are short" in notes
    )


def test_one_request_per_rank_is_not_random():
    """sample-dxt-simple.darshan: 16 processes, 2 writes in all, each a rank's first on
    its file; Darshan's consecutive counter skips first accesses, so it says 0."""
    profile = job_profile.load_profile(TEST_INPUT / "sample-dxt-simple.darshan")
    _, _, ioops = pydarshan_reports(TEST_INPUT / "sample-dxt-simple.darshan")
    assert ioops["POSIX"]["POSIX_WRITES"] == 2 and ioops["POSIX"]["POSIX_CONSEC_WRITES"] == 0
    assert profile.consecutive["write"] == 1.0 and profile.sequential["write"] == 1.0
    # and a job that seeks about on one rank stays as random as Darshan says
    macsio = job_profile.load_profile(
        EXAMPLES / "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"
    )
    assert macsio.consecutive["write"] < 0.05


@pytest.mark.parametrize(
    "keep, missing",
    [(100, "its header"), (1000, "the table of file names"), (6000, "the POSIX module's records")],
)
def test_a_truncated_log_is_one_line_naming_what_is_missing(tmp_path, keep, missing):
    log = tmp_path / "cut.darshan"
    log.write_bytes((TEST_INPUT / "sample-goodost.darshan").read_bytes()[:keep])
    with pytest.raises(job_profile.AdvisorError) as err:
        job_profile.load_profile(log)
    message = str(err.value)
    assert "truncated or damaged Darshan log" in message and missing in message
    assert "\n" not in message
    result = run_cli("advise", log)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and missing in result.stderr


# ---- descriptions ----------------------------------------------------------------------------
GOOD = {
    "processes": 8,
    "nodes": 2,
    "bytes": "2 GiB",
    "read_fraction": 0.25,
    "request_size": "64k",
    "sequential_fraction": 0.5,
    "footprint": "4 GiB",
    "files": 16,
    "files_written": 8,
    "opens": 20,
    "stats": 30,
    "stage_in": {"bytes": "1 GiB", "files": 4},
}


def test_a_description_becomes_the_profile_it_says():
    p = job_profile.description_profile(GOOD)
    assert (p.processes, p.nodes) == (8, 2)
    assert p.bytes_read == GIB // 2 and p.bytes_written == 3 * GIB // 2
    assert p.size_classes == {"read": [[64 * KIB, GIB // 2]], "write": [[64 * KIB, 3 * GIB // 2]]}
    assert p.reads == 8192 and p.writes == 24576
    assert p.consecutive == {"read": 0.5, "write": 0.5} and p.unique_bytes == 4 * GIB
    assert (p.files, p.files_written, p.opens, p.stats) == (16, 8, 20, 30)
    assert p.staging == {"in": {"bytes": GIB, "files": 4}}
    defaults = job_profile.description_profile(
        {"processes": 4, "bytes": "1m", "request_size": 4096}
    )
    assert (defaults.files, defaults.files_written, defaults.opens, defaults.stats) == (4, 4, 4, 0)
    assert defaults.unique_bytes == MIB and defaults.consecutive["write"] == 1.0


DROP = object()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"procs": 3}, "unknown key 'procs'"),
        ({"processes": DROP}, "missing 'processes'"),
        ({"processes": None}, "processes: expected an integer of at least 1"),
        ({"processes": 0}, "processes: expected an integer of at least 1"),
        ({"bytes": "lots"}, "bytes: expected a size such as 4 GiB"),
        ({"bytes": "3 parsecs"}, "bytes: expected a size"),
        ({"read_fraction": 1.5}, "read_fraction: expected a fraction from 0 to 1"),
        ({"sequential_fraction": "most"}, "sequential_fraction: expected a fraction"),
        ({"files_written": 17}, "files_written: 17 is more than the 16 files opened"),
        ({"nodes": 9}, "nodes: 9 nodes for 8 processes"),
        ({"stage_in": "yes"}, "stage_in: expected {bytes: SIZE, files: N}"),
        (
            {"stage_out": {"bytes": "1g", "files": 0}},
            "stage_out: files: expected an integer of at least 1",
        ),
        ({"request_size": 0}, "request_size: expected at least 1 byte"),
    ],
)
def test_a_bad_description_is_one_line_naming_the_key(tmp_path, change, message):
    data = {k: v for k, v in dict(GOOD, **change).items() if v is not DROP}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(job_profile.AdvisorError) as err:
        job_profile.load_profile(path)
    assert message in str(err.value) and "job.yaml" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_description_that_is_not_yaml_or_not_a_mapping_is_one_line(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("processes: 4\nbytes: [1, 2\n")
    with pytest.raises(job_profile.AdvisorError, match=r"broken.yaml: not valid YAML at line 3"):
        job_profile.load_profile(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    with pytest.raises(job_profile.AdvisorError, match="expected a mapping of workload keys"):
        job_profile.load_profile(listed)
    with pytest.raises(job_profile.AdvisorError, match="no such file"):
        job_profile.load_profile(tmp_path / "nothing.yaml")
    with pytest.raises(job_profile.AdvisorError, match="--nodes and --stage are for Darshan logs"):
        job_profile.load_profile(listed, nodes=2)


# ---- predictions from a history with known answers ------------------------------------------
def known_model(scale=1.0):
    """A one-regime model whose curves give round answers: 1000 MiB/s at the focal point
    (64 MiB, 1 MiB, readFrac 0.5, seqFrac 0.5, 2 processes); 64 KiB requests reach 0.4 of
    it, reads 1.25x and writes 0.8x, seqFrac 1 is 2x seqFrac 0.5; uniqueBytes and
    processNum do not matter."""
    focal = ss.Workload(64 * MIB, MIB, 0.5, 0.5, 2)

    def curve(p, xs, factors):
        return ss.Curve(p, xs, [1000 * MIB * scale * f for f in factors], regime="cache")

    unique = ss.Curve("unique_bytes", [MIB, 64 * MIB, GIB], [1000 * MIB * scale] * 3)
    curves = {
        "size_mean": curve("size_mean", [4 * KIB, 64 * KIB, MIB, 16 * MIB], [0.1, 0.4, 1.0, 1.2]),
        "read_frac": curve("read_frac", [0.0, 0.5, 1.0], [0.8, 1.0, 1.25]),
        "seq_frac": curve("seq_frac", [0.0, 0.5, 1.0], [0.5, 1.0, 2.0]),
        "process_num": curve("process_num", [1, 2, 4], [1.0, 1.0, 1.0]),
    }
    return ss.Model(
        unique_curve=unique,
        regimes={"cache": ss.Regime("cache", focal, 1000 * MIB * scale, curves)},
    )


def selfscale_case(
    target,
    model,
    error_median,
    error_max,
    environ="gnu-openmpi",
    request_rates=None,
    far=None,
    reopen=None,
    phase_seconds=None,
    held_out=4,
    spread=0.0,
):
    """The figures a self-scaling check stores for this model (its two prediction errors
    and, given ``request_rates``, its request rates declare their roles; given ``far``,
    {(parameter, band): error}, its far validation's errors; given ``reopen``, its
    reopen probe's result; ``phase_seconds``: {metric: its timed phase}).  ``held_out``
    workloads validate it (5 or more: the interval of the median error is stored too),
    their errors spread evenly ``spread`` x ``error_median`` either side of it."""
    domain = ss.Domain(unique_bytes=(MIB, GIB), process_num=(1, 4))
    exploration = ss.Exploration(
        domain=domain, rules=ss.Rules(), model=model, rounds=[], settled=True, points_measured=40
    )
    workloads = ss.draw_workloads(domain, held_out, seed=1)
    predicted = [model.predict(w) for w in workloads]
    errors = [error_median * (1 + spread * (2 * i / (held_out - 1) - 1)) for i in range(held_out)]
    validation = ss.Validation(
        workloads, predicted, [p / (1 + e) for p, e in zip(predicted, errors)]
    )
    result = {
        "exploration": exploration.as_dict(),
        "validation": validation.as_dict(),
        "timing": {"total_s": 300.0},
        "request_rates": request_rates,
        "reopen": reopen,
    }
    if far:
        pushed = [ss.FarWorkload(workloads[0], p, band, band) for p, band in far]
        predicted = [model.predict(f.workload) for f in pushed]
        measured = [v / (1 + error) for v, error in zip(predicted, far.values())]
        result["far_validation"] = {
            "workloads": [f.as_dict() for f in pushed],
            "validation": ss.Validation(
                [f.workload for f in pushed], predicted, measured
            ).as_dict(),
        }
    figures, samples = declared_figures(result)
    declarations = {n: d.as_dict() for n, (_, d) in figures.items()}
    values = {n: v for n, (v, _) in figures.items()}
    assert declarations["prediction_error_median"]["role"] == "model_error_median"
    assert declarations["prediction_error_max"]["role"] == "model_error_max"
    values["prediction_error_max"] = 100 * error_max
    return make_case(
        "SelfScaleCheck",
        {"scratch_target": target},
        environ,
        target,
        {n: (values[n], d["unit"], samples.get(n, [])) for n, d in declarations.items()},
        declarations=declarations,
        phase_seconds=phase_seconds,
    )


def declared(label, unit, role, headline=""):
    return {
        "label": label,
        "unit": unit,
        "better": "higher",
        "headline": headline,
        "chart": None,
        "role": role,
    }


def rate_cases(target, factor, burst=True):
    """Metadata rates in two variants (one leads the pages) and staging rates: per file,
    per byte past a 256 MiB burst and, with `burst`, the burst's (4x faster) and the
    largest copy timed (512 MiB)."""
    cases = []
    for removers, lead in ((1, True), (4, False)):
        cases.append(
            make_case(
                "MetadataCheck",
                {"scratch_target": target, "layout": f"r{removers}"},
                "gnu-openmpi",
                target,
                {
                    "c": (1000 * factor, "ops/s", []),
                    "o": (5000 * factor, "ops/s", []),
                    "s": (20000 * factor, "ops/s", []),
                    "d": (
                        400 * factor * removers**2 / 4 if removers > 1 else 400 * factor,
                        "deletions/s",
                        [],
                    ),
                },
                declarations={
                    "c": declared(
                        "creations",
                        "ops/s",
                        "creations_per_s",
                        "Create empty files" if lead else "",
                    ),
                    "o": declared("opens", "ops/s", "opens_per_s"),
                    "s": declared("stats", "ops/s", "stats_per_s"),
                    "d": declared("deletions", "deletions/s", "deletions_per_s"),
                },
                variant=f"{removers} remover{'s' * (removers > 1)} per rank",
            )
        )
    figures = {
        "bi": (100 * factor, "MiB/s", []),
        "fi": (50 * factor, "files/s", []),
        "bo": (80 * factor, "MiB/s", []),
        "fo": (40 * factor, "files/s", []),
    }
    declarations = {
        "bi": declared("in", "MiB/s", "stage_in_bytes_per_s"),
        "fi": declared("files in", "files/s", "stage_in_files_per_s"),
        "bo": declared("out", "MiB/s", "stage_out_bytes_per_s"),
        "fo": declared("files out", "files/s", "stage_out_files_per_s"),
    }
    if burst:
        figures.update(
            {
                "bbi": (400 * factor, "MiB/s", []),
                "bbo": (320 * factor, "MiB/s", []),
                "bb": (256, "MiB", []),
                "bl": (512, "MiB", []),
            }
        )
        declarations.update(
            {
                "bbi": declared("burst in", "MiB/s", "stage_in_first_bytes_per_s"),
                "bbo": declared("burst out", "MiB/s", "stage_out_first_bytes_per_s"),
                "bb": declared("burst size", "MiB", "stage_first_bytes"),
                "bl": declared("largest copy", "MiB", "stage_largest_bytes"),
            }
        )
    cases.append(
        make_case(
            "StagingCheck",
            {"scratch_target": target},
            "builtin",
            target,
            figures,
            declarations=declarations,
        )
    )
    return cases


@pytest.fixture(scope="module")
def known_history(tmp_path_factory):
    """Three nights.  fastfs: the known model at 1.0x, 0.8x, then 1.25x (the latest),
    rates likewise: the prediction is the median night's (1.0x), not the latest's.
    slowfs: rates only (half fastfs's), no self-scaling curves."""
    home = tmp_path_factory.mktemp("advisor-home")
    runs = home / "results" / "runs"
    for night, scale in enumerate((1.0, 0.8, 1.25)):
        cases = [selfscale_case("fastfs", known_model(scale), 0.08, 0.2, far=KNOWN_FAR)]
        cases += rate_cases("fastfs", scale) + rate_cases("slowfs", scale / 2, burst=False)
        run_dir = runs / f"night{night}"
        run_dir.mkdir(parents=True)
        (run_dir / "report.json").write_text(
            json.dumps(make_report(f"night{night}", START + night * DAY, cases))
        )
    db = home / "history.sqlite"
    conn = store.connect(db)
    assert store.ingest_all(conn, runs)[0] == 3
    conn.close()
    return home, db


KNOWN = {
    "processes": 2,
    "bytes": "1 GiB",
    "read_fraction": 0.5,
    "request_size": "64 KiB",
    "sequential_fraction": 1.0,
    "footprint": "64 MiB",
    "files": 100,
    "files_written": 40,
    "opens": 100,
    "stats": 50,
    "stage_in": {"bytes": "1 GiB", "files": 10},
}


#: the far validation of the known model: uniqueBytes up to 2x and 4x past its range,
#: request sizes only up to 2x
KNOWN_FAR = {("unique_bytes", 2.0): 0.3, ("unique_bytes", 4.0): 0.5, ("size_mean", 2.0): 0.25}


@pytest.mark.parametrize(
    "change, words",
    [
        # 1.5x the 1 GiB measured: the error measured up to 2x
        (
            {"footprint": "1536 MiB"},
            "extrapolated 1.5x beyond what was measured; median error 30% on 1 held-out "
            "workload up to 2x past the measured range",
        ),
        (
            {"footprint": "3 GiB"},
            "extrapolated 3.0x beyond what was measured; median error 50% on 1 held-out "
            "workload up to 4x past the measured range",
        ),
        # two parameters past the range: the larger band and error of the two
        (
            {"footprint": "1536 MiB", "request_size": "24 MiB"},
            "extrapolated 1.5x beyond what was measured; median error 30% on 1 held-out "
            "workload up to 2x past the measured range",
        ),
        # request sizes were validated up to 2x only; processes never (the search cannot
        # launch more ranks than it has); 16x is past every band
        (
            {"request_size": "48 MiB"},
            "extrapolated 3.0x beyond what was measured; no error known at that distance",
        ),
        (
            {"processes": 8},
            "extrapolated 2.0x beyond what was measured; no error known at that distance",
        ),
        (
            {"footprint": "16 GiB"},
            "extrapolated 16.0x beyond what was measured; no error known at that distance",
        ),
        ({}, "inside the measured range: validation error median 8%, max 20%"),
    ],
)
def test_the_error_printed_is_the_one_measured_at_the_distance(tmp_path, change, words):
    db = history_of(
        tmp_path, [(0, [selfscale_case("fastfs", known_model(), 0.08, 0.2, far=KNOWN_FAR)])]
    )
    job = dict(KNOWN, **change)
    job["bytes"] = "4 GiB" if "footprint" in change else job["bytes"]
    result = advisor.advise(job_profile.description_profile(job, "far"), db_path=db)
    data = result["targets"][0]["parts"]["data"]
    assert data["extra"]["error_words"] == words
    assert words in advisor_report.format_advice(result)


def test_the_page_prints_the_error_measured_at_the_distance(tmp_path):
    """The form's answer past the measured range carries the far validation's error, as
    advise's does: a model measured up to 4 GiB, a job touching 16 GiB per node (4x).
    On a target whose opens drop the cache, the form charges the reads' first pass as
    advise does: the same seconds.  Inside the range (64 MiB per node), the validation
    error with the interval that holds its median (20 held-out workloads, errors 4% to
    12%: 6% to 10%), as advise says it."""
    from playwright.sync_api import sync_playwright

    model = known_model()
    model.unique_curve = ss.Curve("unique_bytes", [MIB, 64 * MIB, 4 * GIB], [1000 * MIB] * 3)
    far = {("unique_bytes", 2.0): 0.3, ("unique_bytes", 4.0): 0.5}
    db = history_of(
        tmp_path,
        [
            (
                0,
                [
                    selfscale_case(
                        "fastfs",
                        model,
                        0.08,
                        0.2,
                        far=far,
                        reopen=DROPPING_OPENS,
                        held_out=20,
                        spread=0.5,
                    )
                ],
            )
        ],
    )
    out = tmp_path / "pages"
    pages.build(out, db_path=db)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/advisor.html")
            form = page.locator("#advisor-form")
            for name, value in (
                ("processes_per_node", "2"),
                ("request_size", str(64 * KIB)),
                ("footprint_per_node", str(16 * GIB)),
            ):
                form.locator(f"[name={name}]").select_option(value)
            form.locator("[name=read_fraction]").fill("0.5")
            page.wait_for_timeout(200)
            description = page.locator("#advisor-yaml").text_content()
            shown = page.locator("#advisor-result").text_content()
            seconds = page.locator("#advisor-result tr[data-part=data]").get_attribute(
                "data-seconds"
            )
            form.locator("[name=footprint_per_node]").select_option(str(64 * MIB))
            page.wait_for_timeout(200)
            inside_description = page.locator("#advisor-yaml").text_content()
            inside_shown = page.locator("#advisor-result").text_content()
            browser.close()
    finally:
        server.shutdown()
    job = tmp_path / "job.yaml"
    job.write_text(description)
    expected = advisor.advise(job_profile.load_profile(job), db_path=db)
    data = expected["targets"][0]["parts"]["data"]
    assert any("first pass" in n for n in data["notes"])
    assert float(seconds) == pytest.approx(data["seconds"], rel=1e-6)
    assert "the reads' first pass over the files opened at 100 MiB/s" in shown
    words = data["extra"]["error_words"]
    assert words == (
        "extrapolated 4.0x beyond what was measured; median error 50% on 1 held-out "
        "workload up to 4x past the measured range"
    )
    assert words in shown
    job.write_text(inside_description)
    inside = advisor.advise(job_profile.load_profile(job), db_path=db)
    words = inside["targets"][0]["parts"]["data"]["extra"]["error_words"]
    assert words == (
        "inside the measured range: validation error median 8% (6% to 10% with 90% "
        "confidence), max 20%"
    )
    assert words in inside_shown


#: a reopen probe on a GlusterFS client with fopen-keep-cache off: every cached page of
#: the file dropped at the new open, its first pass read at 100 MiB/s
DROPPING_OPENS = {
    "unique_bytes": 256 * MIB,
    "cached_bytes": 64 * MIB,
    "kept": 0.0,
    "first_pass_Bps": 100 * MIB,
}


def test_a_first_read_of_each_file_opened_where_an_open_drops_the_cache(tmp_path):
    """Where a new open drops a file's cached pages, the job's first pass over its files
    is charged at the first-pass rate, the rest as the curves say; a job that opens
    nothing, and a target whose opens keep the cache, as before."""
    dropping = history_of(
        tmp_path / "dropping",
        [(0, [selfscale_case("fastfs", known_model(), 0.08, 0.2, reopen=DROPPING_OPENS)])],
    )
    keeping = history_of(
        tmp_path / "keeping",
        [
            (
                0,
                [
                    selfscale_case(
                        "fastfs",
                        known_model(),
                        0.08,
                        0.2,
                        reopen=dict(DROPPING_OPENS, kept=1.0, first_pass_Bps=None),
                    )
                ],
            )
        ],
    )
    # KNOWN: 512 MiB read at 1000 MiB/s and 512 MiB written at 640 MiB/s by the curves;
    # 64 MiB touched, so an eighth of the reads is the first pass, at 100 MiB/s
    curves = 512 / 1000 + 512 / 640
    first = 7 / 8 * 512 / 1000 + 1 / 8 * 512 / 100 + 512 / 640
    for db, job, expected in (
        (dropping, KNOWN, first),
        (dropping, dict(KNOWN, opens=0), curves),
        (keeping, KNOWN, curves),
    ):
        profile = job_profile.description_profile(job, "job")
        data = advisor.predict_data(profile, advisor.load_figures(db_path=db)["fastfs"])
        assert data.seconds == pytest.approx(expected, rel=1e-9), (db.parent.name, job)
        said = [n for n in data.notes if "first pass" in n]
        assert said == (
            [
                "64 MiB of the reads are a first pass over files the job opens, at 100 MiB/s "
                "(the stored first-pass read rate): a new open on this target drops 100% of "
                "a file's cached pages, so the page cache serves only what is read again "
                "within one open"
            ]
            if expected == first
            else []
        )


def test_prediction_on_known_curves_and_rates(known_history):
    _, db = known_history
    result = advisor.advise(job_profile.description_profile(KNOWN, "known"), db_path=db)
    fast, slow = result["targets"]
    assert (fast["target"], slow["target"]) == ("fastfs", "slowfs")
    data = fast["parts"]["data"]
    # reads: 512 MiB at 1000 x 0.4 x 1.25 x 2 = 1000 MiB/s; writes: 512 MiB at
    # 1000 x 0.4 x 0.8 x 2 = 640 MiB/s on the median night (1.0x); the other nights
    # were 0.8x and, the latest, 1.25x
    expected = 512 / 1000 + 512 / 640
    assert data["seconds"] == pytest.approx(expected, rel=1e-9)
    assert (data["low"], data["high"]) == (
        pytest.approx(expected / 1.25, rel=1e-9),
        pytest.approx(expected / 0.8, rel=1e-9),
    )
    assert data["runs"] == 3
    assert data["extra"]["model_error_median"] == pytest.approx(0.08, abs=1e-6)
    assert data["extra"]["model_error_max"] == pytest.approx(0.2, abs=1e-9)
    meta = fast["parts"]["metadata"]
    # 40 creations at 1000/s, 60 opens of existing files at 5000/s, 50 stats at 20000/s
    assert meta["seconds"] == pytest.approx(0.04 + 0.012 + 0.0025, rel=1e-9)
    assert meta["high"] == pytest.approx((0.04 + 0.012 + 0.0025) / 0.8, rel=1e-9)
    deletion = fast["parts"]["deletion"]
    assert deletion["seconds"] == pytest.approx(40 / 400, rel=1e-9)
    assert "1 remover per rank" in deletion["rests_on"]
    assert deletion["extra"]["faster"]["seconds"] == pytest.approx(40 / 1600, rel=1e-9)
    assert deletion["extra"]["faster"]["variant"] == "4 removers per rank"
    staging = fast["parts"]["staging"]
    # 1 GiB in 10 files: its first 256 MiB at the burst's 400 MiB/s, the other 768 MiB
    # at 100 MiB/s, both once the per-file cost is out, plus 10 files at 50 files/s
    assert staging["seconds"] == pytest.approx(0.64 + 7.68 + 0.2, rel=1e-9)
    assert staging["low"] == pytest.approx((0.64 + 7.68 + 0.2) / 1.25, rel=1e-9)
    assert "256 MiB at 400 MiB/s (a burst)" in staging["rests_on"]
    assert (
        "stage-in: 1 GiB is 2.0x the largest copy the staging check timed (512 MiB): "
        "its sustained bandwidth is carried past what was measured"
    ) in staging["notes"]
    total = fast["total"]
    assert total["seconds"] == pytest.approx(expected + 0.0545 + 0.1 + 8.52, rel=1e-9)
    assert total["low"] <= total["seconds"] <= total["high"]
    assert fast["figures_to"] == START + 2 * DAY and fast["figures_from"] == START + 2 * DAY
    # no curves: said, not guessed; the rest still predicted
    assert slow["parts"]["data"]["seconds"] is None
    assert slow["parts"]["data"]["missing"] == "no self-scaling curves yet"
    assert slow["parts"]["metadata"]["seconds"] == pytest.approx(2 * 0.0545, rel=1e-9)
    # no burst stored: every byte at the one bandwidth (50 MiB/s), 10 files at 25/s
    assert slow["parts"]["staging"]["seconds"] == pytest.approx(20.48 + 0.4, rel=1e-9)
    assert slow["total"]["seconds"] is None and "data" in slow["total"]["missing"]
    assert result["recommendation"]["target"] == "fastfs"
    text = advisor_report.format_advice(result)
    assert "no self-scaling curves yet" in text
    assert "inside the measured range: validation error median 8%, max 20%" in text


def test_the_target_is_named_only_when_the_intervals_part(known_history):
    a = {"target": "a", "total": {"seconds": 10.0, "low": 9.0, "high": 11.0}}
    b = {"target": "b", "total": {"seconds": 12.0, "low": 11.5, "high": 13.0}}
    close = {"target": "c", "total": {"seconds": 10.5, "low": 10.0, "high": 12.0}}
    lone = {"target": "d", "total": {"seconds": 20.0, "low": None, "high": None}}
    assert advisor.recommend([b, a])["target"] == "a"
    assert advisor.recommend([a, close])["target"] is None
    assert "no clear winner" in advisor.recommend([a, close])["words"]
    assert (
        advisor.recommend([lone, dict(a, total=dict(a["total"], low=None, high=None))])["target"]
        is None
    )


def test_a_job_beyond_the_measured_range_says_so(known_history):
    _, db = known_history
    wide = dict(KNOWN, processes=64, request_size="256 MiB", footprint="64 GiB")
    result = advisor.advise(job_profile.description_profile(wide, "wide"), db_path=db)
    notes = " ".join(result["targets"][0]["parts"]["data"]["notes"])
    assert "64 processes per node, 16.0x the 4 measured" in notes
    assert "64 GiB touched per node, 64.0x the 1 GiB measured" in notes
    assert "requests of 256 MiB, 16.0x above the 4 KiB to 16 MiB measured" in notes


def test_a_log_with_several_nodes_divides_the_job_evenly(known_history):
    _, db = known_history
    one = job_profile.load_profile(TEST_INPUT / "sample-goodost.darshan")
    four = job_profile.load_profile(TEST_INPUT / "sample-goodost.darshan", nodes=4)
    staged = job_profile.load_profile(TEST_INPUT / "sample-goodost.darshan", stage=True)
    assert staged.staging == {
        "in": {"bytes": 0, "files": 0},
        "out": {"bytes": 48 * GIB + 1584, "files": 49},
    }
    figures = advisor.load_figures(db_path=db)
    t1 = advisor.predict_target(one, figures["fastfs"])["parts"]["data"]["seconds"]
    t4 = advisor.predict_target(four, figures["fastfs"])["parts"]["data"]["seconds"]
    # the known model does not depend on processes or uniqueBytes: 4 nodes, 4x as fast
    assert t4 == pytest.approx(t1 / 4, rel=1e-9)
    assert "one node assumed" in " ".join(one.notes)


# ---- the command ------------------------------------------------------------------------------
def test_advise_prints_a_table_per_target_for_a_shipped_log(known_history):
    home, db = known_history
    env = {"SCRATCHBENCH_HISTORY": str(db)}
    result = run_cli("advise", TEST_INPUT / "sample-goodost.darshan", env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Workload (Darshan log sample-goodost.darshan): 48 processes" in out
    assert "the log says: 3.76 s of I/O at the slowest rank" in out
    for target in ("fastfs", "slowfs"):
        assert f"\n{target} (parallel): figures of " in out
    assert "no self-scaling curves yet" in out
    as_json = run_cli("advise", TEST_INPUT / "sample-goodost.darshan", "--json", env=env)
    parsed = json.loads(as_json.stdout)
    assert [t["target"] for t in parsed["targets"]] == ["fastfs", "slowfs"]
    assert parsed["profile"]["bytes_written"] == 48 * GIB + 1584


def test_advise_on_a_description_matches_the_library(known_history, tmp_path):
    _, db = known_history
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(KNOWN))
    result = run_cli("advise", path, "--json", env={"SCRATCHBENCH_HISTORY": str(db)})
    assert result.returncode == 0, result.stderr
    cli = json.loads(result.stdout)
    library = advisor.advise(job_profile.load_profile(path), db_path=db)
    assert cli == json.loads(json.dumps(library))


def test_advise_errors_are_one_line_with_their_own_exit_codes(tmp_path):
    empty = tmp_path / "empty.sqlite"
    store.connect(empty).close()
    result = run_cli(
        "advise", TEST_INPUT / "sample-goodost.darshan", env={"SCRATCHBENCH_HISTORY": str(empty)}
    )
    assert result.returncode == advisor.EXIT_NO_FIGURES
    assert result.stderr.count("\n") == 1 and "no figures of any scratch target" in result.stderr
    bad = tmp_path / "cut.darshan"
    bad.write_bytes((TEST_INPUT / "sample-goodost.darshan").read_bytes()[:6000])
    cut = run_cli("advise", bad)
    assert cut.returncode == 2 and cut.stderr.count("\n") == 1
    assert "truncated or damaged Darshan log" in cut.stderr
    missing = run_cli("advise", tmp_path / "nothing.darshan")
    assert missing.returncode == 2 and "no such file" in missing.stderr


# ---- the page ---------------------------------------------------------------------------------
class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_the_advisor_page_in_chromium(known_history, tmp_path):
    """The page built from the known history: common workloads with their parts, the
    figures' dates; the form, filled in as a user would, gives per target exactly what
    `scratchbench advise` gives for the YAML the page shows; no console errors."""
    from playwright.sync_api import sync_playwright

    _, db = known_history
    out = tmp_path / "pages"
    pages.build(out, db_path=db)
    html = (out / "advisor.html").read_text()
    assert "2027-01-17" in html or "2027-01-18" in html, "the page states the figures' date"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    problems = []
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on(
                "console",
                lambda m: (
                    problems.append(f"{m.type}: {m.text}")
                    if m.type in ("error", "warning")
                    else None
                ),
            )
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("requestfailed", lambda r: problems.append(f"failed request {r.url}"))
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/advisor.html")
            classes = page.locator("table.advisor-classes tbody tr")
            assert classes.count() == len(advisor_report.load_classes())
            # a user's job: 2 nodes x 4 processes, 6 GiB, a third read, 64 KiB requests
            form = page.locator("#advisor-form")
            for name, value in (
                ("nodes", "2"),
                ("bytes", "6"),
                ("read_fraction", "0.3"),
                ("files", "400"),
                ("files_written", "300"),
                ("opens", "500"),
                ("stats", "1000"),
                ("stage_out_bytes", "2"),
                ("stage_out_files", "300"),
            ):
                form.locator(f"[name={name}]").fill(value)
            for name, value in (
                ("processes_per_node", "4"),
                ("request_size", str(64 * KIB)),
                ("sequential_fraction", "0.5"),
                ("footprint_per_node", str(16 * GIB)),
            ):
                form.locator(f"[name={name}]").select_option(value)
            page.wait_for_timeout(200)
            assert page.locator("#advisor-error").text_content() == ""
            description = page.locator("#advisor-yaml").text_content()
            shown = {}
            for row in page.locator("#advisor-result tr[data-part]").all():
                table = row.locator("xpath=ancestor::table")
                shown[(table.get_attribute("data-target"), row.get_attribute("data-part"))] = tuple(
                    float(v) if v else None
                    for v in (
                        row.get_attribute("data-seconds"),
                        row.get_attribute("data-low"),
                        row.get_attribute("data-high"),
                    )
                )
            use = page.locator("#advisor-use").text_content()
            result_words = page.locator("#advisor-result").text_content()
            page.locator("details").first.evaluate("d => d.open = true")
            page.screenshot(path=str(ARTIFACTS / "advisor-page.png"), full_page=True)
            # a bad value: one line on the page, nothing thrown
            form.locator("[name=read_fraction]").fill("2")
            page.wait_for_timeout(100)
            assert "expected 0 to 1" in page.locator("#advisor-error").text_content()
            browser.close()
    finally:
        server.shutdown()
    assert problems == []
    job = tmp_path / "job.yaml"
    job.write_text(description)
    expected = advisor.advise(job_profile.load_profile(job), db_path=db)
    assert expected["profile"]["nodes"] == 2 and expected["profile"]["processes"] == 8
    for t in expected["targets"]:
        for name in advisor.PARTS + ("total",):
            part = t["total"] if name == "total" else t["parts"][name]
            got = shown[(t["target"], name)]
            for value, want in zip(got, (part["seconds"], part["low"], part["high"])):
                if want is None:
                    assert value is None, (t["target"], name, got)
                else:
                    assert value == pytest.approx(want, rel=1e-9), (t["target"], name, got)
    assert expected["recommendation"]["words"] in use
    # 2 GiB staged out, 4x the largest copy timed: the page says so as advise does
    fast_notes = next(t for t in expected["targets"] if t["target"] == "fastfs")["parts"][
        "staging"
    ]["notes"]
    beyond = [n for n in fast_notes if "the largest copy" in n]
    assert beyond == [
        "stage-out: 2 GiB is 4.0x the largest copy the staging check timed "
        "(512 MiB): its sustained bandwidth is carried past what was measured"
    ]
    assert beyond[0] in result_words
    # 16 GiB touched per node, 16x the 1 GiB measured: the page states the distance as
    # advise does, and not the in-range error
    fast_data = next(t for t in expected["targets"] if t["target"] == "fastfs")["parts"]["data"]
    assert fast_data["extra"]["error_words"] == (
        "extrapolated 16.0x beyond what was measured; no error known at that distance"
    )
    assert fast_data["extra"]["error_words"] in result_words
    assert "validation error" not in result_words
    print(f"screenshot: {ARTIFACTS / 'advisor-page.png'}")


def test_the_advisor_names_no_check_and_no_metric():
    """It finds figures by their declarations (roles, selfscale chart entries) only."""
    import re

    code = "".join(
        (REPO / "reports" / name).read_text()
        for name in (
            "advisor.py",
            "advisor_report.py",
            "job_profile.py",
            "advisor_workloads.yaml",
            "templates/advisor.html",
            "templates/advisor.js",
        )
    )
    sources = "\n".join(p.read_text() for p in (REPO / "reframe_checks").rglob("*.py"))
    names = set(re.findall(r"^class (\w+)\(", sources, re.M))
    names |= set(re.findall(r"@figure\(.*?\)\n\s+def (\w+)", sources, re.S))
    names |= set(re.findall(r'add\(\s*f?"(\w+)"', sources))  # selfscale's figures
    assert {
        "create_rate",
        "delete_rate",
        "stage_in_bw",
        "prediction_error_median",
        "KernelMetadata",
    } <= names
    named = sorted(n for n in names if re.search(rf"\b{n}\b", code))
    assert named == [], f"the advisor names {named}"


def test_counts_are_said_in_the_singular_and_the_plural():
    assert units.count_words(1, "file") == "1 file"
    assert units.count_words(1200, "file") == "1,200 files"
    assert (
        units.count_words(2, "open of an existing file", "opens of existing files")
        == "2 opens of existing files"
    )
    job = job_profile.description_profile(
        {
            "processes": 1,
            "bytes": 0,
            "files": 1,
            "files_written": 1,
            "opens": 1,
            "stage_out": {"bytes": "4 MiB", "files": 1},
        },
        "one",
    )
    assert "stages out 4 MiB in 1 file" in job.words()


# ---- bad inputs: one line, exit 2 (7 for no history), nothing created --------------------------
@pytest.mark.parametrize("nodes", ["0", "-3"])
def test_nodes_below_one_are_refused_before_the_store_is_read(tmp_path, nodes):
    env = {"SCRATCHBENCH_HOME": str(tmp_path / "home")}
    result = run_cli("advise", TEST_INPUT / "sample-goodost.darshan", "--nodes", nodes, env=env)
    assert result.returncode == 2 and result.stdout == ""
    assert (
        result.stderr == f"scratchbench: error: --nodes: expected an integer of at "
        f"least 1, got {nodes}\n"
    )
    assert not (tmp_path / "home").exists()


def test_a_log_without_its_suffix_is_read_as_a_log_by_its_header(tmp_path):
    renamed = tmp_path / "job_output"
    renamed.write_bytes((TEST_INPUT / "sample-goodost.darshan").read_bytes())
    assert job_profile.load_profile(renamed).modules["POSIX"]["bytes_written"] == 48 * GIB
    noise = tmp_path / "core"
    noise.write_bytes(bytes([0xF8, 0x00, 0x91, 0xFF]) * 64)
    result = run_cli("advise", noise, env={"SCRATCHBENCH_HOME": str(tmp_path / "home")})
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert (
        "neither a Darshan log (no Darshan header) nor a workload description" in result.stderr
        and "codec" not in result.stderr
    )
    assert not (tmp_path / "home").exists()


def test_a_history_that_does_not_exist_is_not_created(tmp_path):
    store_path = tmp_path / "no" / "such" / "history.sqlite"
    result = run_cli(
        "advise",
        TEST_INPUT / "sample-goodost.darshan",
        env={"SCRATCHBENCH_HISTORY": str(store_path)},
    )
    assert result.returncode == advisor.EXIT_NO_FIGURES and result.stderr.count("\n") == 1
    assert "no such file" in result.stderr
    assert not (tmp_path / "no").exists()


def test_numbers_are_words_without_exponents():
    assert units.size_words(1023.9 * MIB) == "1,020 MiB"
    assert units.size_words(1024 * MIB) == "1 GiB"
    assert advisor.seconds_words(0.9996) == "1,000 ms"
    job = job_profile.description_profile(
        {"processes": 1, "bytes": "1000 KiB", "request_size": "1000 KiB"}, "one"
    )
    assert "1,000 KiB written in 1 request (mean 1,000 KiB" in job.words()
    assert "e+" not in job.words()


# ---- a cost per request ------------------------------------------------------------------------
ONE_BYTE_READS = {
    "processes": 1,
    "bytes": 1_000_000,
    "read_fraction": 1.0,
    "request_size": 1,
    "footprint": "1 MiB",
    "files": 1,
}


def test_a_million_one_byte_reads_cost_a_request_each(known_history, tmp_path):
    """The known model's smallest measured requests (4 KiB, read, consecutive, on fastfs)
    run at 1000 MiB/s x 0.1 x 1.25 x 2 = 250 MiB/s, 64,000 requests/s: a million 1-byte
    reads take 15.6 s, not the 3.8 ms of their bytes at that throughput."""
    _, db = known_history
    path = tmp_path / "bytes.yaml"
    path.write_text(yaml.safe_dump(ONE_BYTE_READS))
    result = run_cli("advise", path, "--json", env={"SCRATCHBENCH_HISTORY": str(db)})
    assert result.returncode == 0, result.stderr
    fastfs = json.loads(result.stdout)["targets"][0]
    data = fastfs["parts"]["data"]
    assert data["seconds"] == pytest.approx(1e6 / (250 * MIB / (4 * KIB)), rel=1e-6)
    assert data["seconds"] > 1.0
    assert (
        "read requests timed by their number, not their bytes: 1 B at 64,000 requests/s "
        "(the model's at its smallest requests measured (4 KiB))" in data["notes"]
    )
    # requests as large as the smallest measured are timed by their bytes as before
    kib = job_profile.description_profile(
        dict(ONE_BYTE_READS, bytes=4096 * 1000, request_size="4 KiB"), "4k"
    )
    figures = advisor.load_figures(db_path=db)["fastfs"]
    assert advisor.predict_data(kib, figures).seconds == pytest.approx(
        4096 * 1000 / (250 * MIB), rel=1e-6
    )


def test_a_stored_request_rate_is_used_where_a_figure_declares_it(tmp_path):
    runs = tmp_path / "runs"
    cases = [
        selfscale_case("fastfs", known_model(), 0.08, 0.2),
        make_case(
            "RequestCheck",
            {"scratch_target": "fastfs"},
            "builtin",
            "fastfs",
            {"r": (500_000, "ops/s", [])},
            declarations={"r": declared("1-byte reads", "ops/s", "read_requests_per_s")},
        ),
    ]
    (runs / "night0").mkdir(parents=True)
    (runs / "night0" / "report.json").write_text(json.dumps(make_report("night0", START, cases)))
    db = tmp_path / "history.sqlite"
    conn = store.connect(db)
    assert store.ingest_all(conn, runs)[0] == 1
    conn.close()
    profile = job_profile.description_profile(ONE_BYTE_READS, "bytes")
    data = advisor.predict_data(profile, advisor.load_figures(db_path=db)["fastfs"])
    assert data.seconds == pytest.approx(2.0, rel=1e-6)
    assert any(
        "1 B at 500,000 requests/s (the stored read requests per s of 4 KiB)" in n
        for n in data.notes
    )


def test_a_prediction_on_figures_timed_too_briefly_says_so(tmp_path):
    """Metadata rates timed in 20 ms phases (the quick tag's) still predict, with a note
    that they are too short to trust; the same rates timed over seconds carry no note."""

    def case(phase):
        return make_case(
            "MetadataCheck",
            {"scratch_target": "fastfs"},
            "gnu-openmpi",
            "fastfs",
            {"c": (1000.0, "ops/s", []), "o": (5000.0, "ops/s", []), "s": (20000.0, "ops/s", [])},
            declarations={
                "c": declared("creations", "ops/s", "creations_per_s"),
                "o": declared("opens", "ops/s", "opens_per_s"),
                "s": declared("stats", "ops/s", "stats_per_s"),
            },
            phase_seconds={"c": phase, "o": phase, "s": phase},
        )

    profile = job_profile.description_profile(KNOWN, "known")
    notes = {}
    for phase in (0.02, 3.0):
        db = history_of(tmp_path / str(phase), [(0, [case(phase)])])
        part = advisor.predict_metadata(profile, advisor.load_figures(db_path=db)["fastfs"])
        assert part.seconds == pytest.approx(40 / 1000 + 60 / 5000 + 50 / 20000)
        notes[phase] = [n for n in part.notes if "too short to trust" in n]
    assert notes[0.02] == [
        f"rests on figures {too_short_words(0.02)} (creations; opens; stats): run "
        "a nightly or acceptance workload for figures to plan with"
    ]
    assert notes[3.0] == []


def history_of(tmp_path, nights):
    """A history store of [(night, [cases])]: each night one run, a day apart."""
    runs = tmp_path / "runs"
    for night, cases in nights:
        (runs / f"night{night}").mkdir(parents=True)
        (runs / f"night{night}" / "report.json").write_text(
            json.dumps(make_report(f"night{night}", START + night * DAY, cases))
        )
    db = tmp_path / "history.sqlite"
    conn = store.connect(db)
    assert store.ingest_all(conn, runs)[0] == len(nights)
    conn.close()
    return db


def test_the_self_scaling_checks_request_rate_charges_each_request(tmp_path):
    """The rate the self-scaling check measures (on one process, at its smallest
    requests) is stored with its role and charges each request: a million 1-byte
    reads at 400,000 requests/s take 2.5 s; 4 processes per node take what the
    model's processNum curve says (flat here: as long); the sum form adds the bytes'
    time."""
    rates = {"read": 400_000.0, "write": 100_000.0, "size": KIB, "unique_bytes": 64 * MIB}
    db = history_of(
        tmp_path, [(0, [selfscale_case("fastfs", known_model(), 0.08, 0.2, request_rates=rates)])]
    )
    figures = advisor.load_figures(db_path=db)["fastfs"]
    assert figures.rates["read_requests_per_s"][0].value == 400_000.0
    assert figures.rates["write_requests_per_s"][0].value == 100_000.0
    one = job_profile.description_profile(ONE_BYTE_READS, "bytes")
    data = advisor.predict_data(one, figures)
    assert data.seconds == pytest.approx(2.5, rel=1e-9)
    assert any(
        "400,000 requests/s (the stored read requests per s of 4 KiB)" in n for n in data.notes
    )
    four = job_profile.description_profile(dict(ONE_BYTE_READS, processes=4), "four")
    assert advisor.predict_data(four, figures).seconds == pytest.approx(2.5, rel=1e-9)
    writes = job_profile.description_profile(dict(ONE_BYTE_READS, read_fraction=0.0), "w")
    assert advisor.predict_data(writes, figures).seconds == pytest.approx(10.0, rel=1e-9)
    # 4 KiB reads (consecutive): 250 MiB/s by their bytes, 64,000/s; 400,000/s by number
    model = figures.models[0][1]
    kib = job_profile.description_profile(
        dict(ONE_BYTE_READS, bytes=4096 * 1000, request_size="4 KiB"), "4k"
    )
    by_bytes, by_requests = 4096 * 1000 / (250 * MIB), 1000 / 400_000
    for form, expected in (("max", by_bytes), ("sum", by_bytes + by_requests)):
        seconds, bound = advisor.class_seconds(
            kib, model, "read", 4096, 4096 * 1000, figures.rates["read_requests_per_s"][0], form
        )
        assert seconds == pytest.approx(expected, rel=1e-9) and not bound
    with pytest.raises(job_profile.AdvisorError, match="expected 'max' or 'sum', got 'min'"):
        advisor.class_seconds(kib, model, "read", 4096, 4096, None, "min")


def request_rate_history(path, rates, phase_seconds=None):
    """A history of one self-scaling run on "fastfs" (known_model) that stored
    ``rates``: its request rates and shares, each timed in ``phase_seconds``."""
    case = selfscale_case(
        "fastfs", known_model(), 0.08, 0.2, request_rates=rates, phase_seconds=phase_seconds
    )
    return history_of(path, [(0, [case])])


def test_a_request_of_another_size_costs_its_fixed_share_and_its_bytes(tmp_path):
    """Where the check measured what share of a request's time does not grow with its
    bytes (75% here, at the model's smallest measured size, 4 KiB, against 16 KiB), a
    request of another size costs that share of a measured request's time plus its
    bytes at the measured cost per byte, up to 16 KiB (request_rate_at_size): a million
    1-byte reads at 400,000 requests/s (4 KiB) take 1e6 x (0.75 + 0.25 / 4096) / 400,000
    s, not 2.5 s; 2 KiB reads take 0.875 of a 4 KiB read's time each, 8 KiB reads 1.25
    times it, 16 KiB reads and larger 1.75 times it (what 16 KiB cost; their bytes are
    the throughput's).  Writes, whose stored share is 100% (each a round trip to a
    server), cost a whole request whatever their size.  The note says which share it
    used."""
    rates = {
        "read": 400_000.0,
        "write": 100_000.0,
        "size": 4 * KIB,
        "larger_size": 16 * KIB,
        "unique_bytes": 64 * MIB,
        "fixed_share": {"read": 0.75, "write": 1.0},
    }
    db = request_rate_history(tmp_path, rates)
    figures = advisor.load_figures(db_path=db)["fastfs"]
    assert figures.rates["read_request_fixed_share"][0].value == pytest.approx(0.75)
    one = job_profile.description_profile(ONE_BYTE_READS, "bytes")
    data = advisor.predict_data(one, figures)
    assert data.seconds == pytest.approx(1e6 * (0.75 + 0.25 / 4096) / 400_000, rel=1e-9)
    assert (
        "read requests timed by their number, not their bytes: 1 B at 533,000 requests/s "
        "(the stored read requests per s of 4 KiB; a request of another size costs the 75% "
        "of a 4 KiB request's time that does not grow with its bytes, plus its own bytes up "
        "to 16 KiB (the larger size measured), one of 16 KiB above)" in data.notes
    )
    shape = advisor.RequestShape(fixed=figures.rates["read_request_fixed_share"][0])
    for size, times in ((2 * KIB, 0.875), (4 * KIB, 1.0), (8 * KIB, 1.25), (16 * KIB, 1.75)):
        assert advisor.request_rate_at_size(400_000.0, size, 4 * KIB, shape) == pytest.approx(
            400_000.0 / times, rel=1e-12
        ), size
    assert advisor.request_rate_at_size(400_000.0, MIB, 4 * KIB, shape) == pytest.approx(
        400_000.0 / 1.75, rel=1e-12
    )
    assert advisor.request_rate_at_size(400_000.0, 8 * KIB, 4 * KIB, None) == 400_000.0
    writes = job_profile.description_profile(dict(ONE_BYTE_READS, read_fraction=0.0), "w")
    assert advisor.predict_data(writes, figures).seconds == pytest.approx(10.0, rel=1e-9)
    kib = job_profile.description_profile(
        dict(ONE_BYTE_READS, bytes=4096 * 1000, request_size="4 KiB"), "4k"
    )
    assert advisor.predict_data(kib, figures).seconds == pytest.approx(
        4096 * 1000 / (250 * MIB), rel=1e-9
    )
    # the share describes the request path: shown, never ranked
    assert "read_request_fixed_share" in DESCRIPTIVE_ROLES
    # timed in the quick tag's 0.15 s windows, rate and share are too short to trust,
    # and the note says so
    brief = {"request_rate_read": 0.15, "request_fixed_share_read": 0.15}
    db = request_rate_history(tmp_path / "brief", rates, brief)
    notes = advisor.predict_data(one, advisor.load_figures(db_path=db)["fastfs"]).notes
    note = next(n for n in notes if n.startswith("read requests timed by their number"))
    assert f"rests on figures {too_short_words(0.15)}" in note, note


def test_a_request_under_the_smallest_size_costs_on_the_line_through_the_unit(tmp_path):
    """Where the check also timed the kernel's 512 B requests (60% of a 4 KiB read's
    time here), a request under 4 KiB costs on the line through the two, carried below
    512 B: a 1-byte read 0.6 - 0.4 x 511 / 3584 of a 4 KiB read, a 2 KiB one
    0.6 + 0.4 x 1536 / 3584; 4 KiB and larger as the fixed share says.  A line that
    would reach 0 before 0 bytes (512 B at 5% of 4 KiB) is kept above the unit's time
    scaled by its bytes.  Writes whose 512 B took as long as 4 KiB (a round trip each)
    cost a whole request at any size.  The note names the line and its share; the
    share is never ranked."""
    rates = {
        "read": 400_000.0,
        "write": 100_000.0,
        "size": 4 * KIB,
        "larger_size": 16 * KIB,
        "unit_size": 512,
        "unique_bytes": 64 * MIB,
        "fixed_share": {"read": 0.75, "write": 1.0},
        "unit_share": {"read": 0.6, "write": 1.0},
    }
    figures = advisor.load_figures(db_path=request_rate_history(tmp_path, rates))["fastfs"]
    unit = figures.rates["read_request_unit_share"][0]
    assert unit.value == pytest.approx(0.6) and "read_request_unit_share" in DESCRIPTIVE_ROLES
    shape = advisor.request_shapes(figures)["read"]
    assert shape == advisor.RequestShape(
        fixed=figures.rates["read_request_fixed_share"][0], unit=unit
    )
    one_byte = 0.6 - 0.4 * 511 / 3584
    for size, times in (
        (1, one_byte),
        (512, 0.6),
        (2 * KIB, 0.6 + 0.4 * 1536 / 3584),
        (4 * KIB, 1.0),
        (8 * KIB, 1.25),
    ):
        assert advisor.request_time_share(size, 4 * KIB, shape) == pytest.approx(
            times, rel=1e-12
        ), size
    steep = advisor.RequestShape(fixed=shape.fixed, unit=dataclasses.replace(unit, value=0.05))
    assert advisor.request_time_share(1, 4 * KIB, steep) == pytest.approx(0.05 / 512, rel=1e-12)
    one = job_profile.description_profile(ONE_BYTE_READS, "bytes")
    data = advisor.predict_data(one, figures)
    assert data.seconds == pytest.approx(1e6 * one_byte / 400_000, rel=1e-9)
    note = next(n for n in data.notes if n.startswith("read requests timed by their number"))
    assert (
        "a request under 4 KiB costs on the line through the 4 KiB request's time and the "
        "512 B one's (60% of it, measured)" in note
    ), note
    assert "does not grow with its bytes" not in note, "the fixed share priced nothing"
    writes = job_profile.description_profile(dict(ONE_BYTE_READS, read_fraction=0.0), "w")
    assert advisor.predict_data(writes, figures).seconds == pytest.approx(10.0, rel=1e-9)


def test_the_pages_grid_charges_a_request_as_the_cli_does(tmp_path):
    """The advisor page's grid (computed at build time, read by its script) prices a
    size class as advise does: 64 KiB reads on a target whose 4 KiB reads ran at 4,000/s
    with a 75% fixed share are bound by their number at 4,000 / 1.75 requests/s (the
    16 KiB rate: the largest size measured), on the page and on the command line."""
    rates = {
        "read": 4_000.0,
        "write": 4_000.0,
        "size": 4 * KIB,
        "larger_size": 16 * KIB,
        "unique_bytes": 64 * MIB,
        "fixed_share": {"read": 0.75, "write": 1.0},
    }
    figures = advisor.load_figures(db_path=request_rate_history(tmp_path, rates))["fastfs"]
    job = dict(ONE_BYTE_READS, bytes=64 * MIB, request_size="64 KiB", footprint="64 MiB")
    job.update(sequential_fraction=1.0, processes=1)
    profile = job_profile.description_profile(job, "64k")
    data = advisor.predict_data(profile, figures)
    assert data.seconds == pytest.approx(1024 / (4_000.0 / 1.75), rel=1e-9)
    grid = advisor_report._grid_throughputs(figures)
    page = grid[f"{64 * KIB}|1|1|{64 * MIB}"]["read"][0]
    assert page == pytest.approx(64 * MIB / data.seconds, rel=1e-9)


def test_a_share_of_zero_counts_and_an_unused_share_is_not_noted(tmp_path):
    """A stored share of 0 (a request's time all in its bytes) is a measurement, not a
    gap: a million 1-byte reads then cost their bytes, not 2.5 s at the 4 KiB request
    rate as when the share is missing.  A share counts only at a size other than the smallest
    one measured: 4 KiB writes bound by their number of requests say that their rate was
    timed too briefly when it was, never that the (unused) share was."""
    rates = {
        "read": 400_000.0,
        "write": 10_000.0,
        "size": 4 * KIB,
        "larger_size": 16 * KIB,
        "unique_bytes": 64 * MIB,
        "fixed_share": {"read": 0.0, "write": 1.0},
    }
    db = request_rate_history(tmp_path, rates, {"request_fixed_share_write": 0.15})
    figures = advisor.load_figures(db_path=db)["fastfs"]
    share = figures.rates["read_request_fixed_share"][0]
    assert share.value == 0.0
    shape = advisor.RequestShape(fixed=share)
    assert advisor.request_rate_at_size(400_000.0, 1, 4 * KIB, shape) == 400_000.0 * 4096
    one = job_profile.description_profile(ONE_BYTE_READS, "bytes")
    assert advisor.predict_data(one, figures).seconds < 0.01
    writes = job_profile.description_profile(
        dict(ONE_BYTE_READS, read_fraction=0.0, bytes=4096 * 1000, request_size="4 KiB"), "w"
    )
    notes = advisor.predict_data(writes, figures).notes
    note = next(n for n in notes if n.startswith("write requests timed by their number"))
    assert "rests on figures" not in note and "does not grow" not in note, note


def test_the_error_printed_is_the_one_known_at_the_predictions_distance(known_history):
    """Inside the measured range, the check's validation error (its held-out workloads
    lie there); a real log far outside it (sample-goodost: 48 processes and 48 GiB on
    one node against 4 and 1 GiB measured, IOR's 17-byte writes to stdout 241x below
    the 4 KiB requests measured, its 8 MiB writes inside) says how far it extrapolates
    and that no error is known that far, not the in-range error."""
    _, db = known_history
    figures = advisor.load_figures(db_path=db)
    inside = advisor.predict_all(job_profile.description_profile(KNOWN, "known"), figures)
    data = inside["targets"][0]["parts"]["data"]
    assert data["extra"]["extrapolation"] == 1.0
    assert data["extra"]["error_words"] == (
        "inside the measured range: validation error median 8%, max 20%"
    )
    log = job_profile.load_profile(TEST_INPUT / "sample-goodost.darshan")
    far = advisor.predict_all(log, figures)
    data = far["targets"][0]["parts"]["data"]
    assert data["extra"]["extrapolation"] == pytest.approx(4096 / 17, rel=1e-9)
    assert "48 processes per node, 12.0x the 4 measured (the curve's end is used)" in data["notes"]
    assert "48 GiB touched per node, 48.0x the 1 GiB measured" in data["notes"]
    assert "requests of 17 B, 240.9x below the 4 KiB to 16 MiB measured" in data["notes"]
    text = advisor_report.format_advice(far)
    assert "extrapolated 240.9x beyond what was measured; no error known at that distance" in text
    assert "validation error median" not in text
    # one byte is 4,096x below the 4 KiB requests measured
    tiny = advisor.predict_all(job_profile.description_profile(ONE_BYTE_READS, "b"), figures)
    assert tiny["targets"][0]["parts"]["data"]["extra"]["extrapolation"] == 4096.0


def two_regime_model(top_resident):
    """The known model with a device regime 10x slower from 1 GiB, the knee at 256 MiB
    and what the page cache held of the largest footprint when it was measured."""
    cache = known_model()
    device = ss.Regime(
        "device",
        ss.Workload(GIB, MIB, 0.5, 0.5, 2),
        100 * MIB,
        {
            p: ss.Curve(p, c.xs, [y / 10 for y in c.ys], regime="device")
            for p, c in cache.regimes["cache"].curves.items()
        },
    )
    knee = ss.Knee(
        unique_bytes=256 * MIB,
        cache_level=1000 * MIB,
        device_level=100 * MIB,
        throughput=300 * MIB,
        top_resident=top_resident,
    )
    return ss.Model(
        unique_curve=cache.unique_curve,
        regimes={"cache": cache.regimes["cache"], "device": device},
        knee=knee,
    )


@pytest.mark.parametrize(
    "held, words",
    [
        (
            1.0,
            "upper regime, which the self-scaling check measured still in the page cache "
            "(100% of its largest footprint held)",
        ),
        (0.05, "upper regime, beyond the page cache"),
        (None, "upper regime (whether the page cache still held it was not recorded)"),
    ],
)
def test_the_regime_is_named_only_as_the_check_measured_it(tmp_path, held, words):
    db = history_of(tmp_path, [(0, [selfscale_case("fastfs", two_regime_model(held), 0.1, 0.3)])])
    figures = advisor.load_figures(db_path=db)["fastfs"]
    assert figures.models[0][1].knee.top_resident == held
    big = job_profile.description_profile(dict(KNOWN, footprint="1 GiB"), "big")
    assert f"self-scaling model ({words})" in advisor.predict_data(big, figures).rests_on
    small = job_profile.description_profile(KNOWN, "small")
    assert "(page cache regime)" in advisor.predict_data(small, figures).rests_on


def test_the_models_of_each_environment_are_shown_never_one_silently(tmp_path):
    """Two self-scaling series of one target, one per MPI: the newest environment's
    predicts, the other's prediction is beside it with its name."""
    db = history_of(
        tmp_path,
        [
            (
                0,
                [
                    selfscale_case(
                        "fastfs",
                        known_model(),
                        0.08,
                        0.2,
                        environ="gnu-openmpi",
                        request_rates={
                            "read": 400_000.0,
                            "write": 1e9,
                            "size": KIB,
                            "unique_bytes": MIB,
                        },
                    )
                ],
            ),
            (
                1,
                [
                    selfscale_case(
                        "fastfs",
                        known_model(0.5),
                        0.8,
                        1.5,
                        environ="gnu-mpich",
                        request_rates={
                            "read": 100_000.0,
                            "write": 1e9,
                            "size": KIB,
                            "unique_bytes": MIB,
                        },
                    )
                ],
            ),
            (2, [selfscale_case("fastfs", known_model(), 0.08, 0.2, environ="gnu-openmpi")]),
        ],
    )
    figures = advisor.load_figures(db_path=db)["fastfs"]
    assert figures.environ == "gnu-openmpi" and list(figures.other_models) == ["gnu-mpich"]
    data = advisor.predict_data(job_profile.description_profile(KNOWN, "known"), figures)
    expected = 512 / 1000 + 512 / 640
    assert data.seconds == pytest.approx(expected, rel=1e-9)
    assert data.extra["other_environments"]["gnu-mpich"] == pytest.approx(2 * expected, rel=1e-9)
    assert "self-scaling model of the gnu-openmpi environment" in data.rests_on
    assert (
        f"with the self-scaling model of the gnu-mpich environment (another MPI): "
        f"{advisor.seconds_words(2 * expected)}; the table uses gnu-openmpi's, the "
        "newest (the advisor does not know which MPI the job used)"
    ) in data.notes
    # requests are charged at the rate measured in the environment that predicts,
    # not at the newest rate of any environment
    one = advisor.predict_data(job_profile.description_profile(ONE_BYTE_READS, "b"), figures)
    assert one.seconds == pytest.approx(2.5, rel=1e-9)
    assert one.extra["other_environments"]["gnu-mpich"] == pytest.approx(10.0, rel=1e-9)


def test_the_page_data_kept_between_builds_is_the_same_and_starts_afresh_when_unsure(
    known_history, tmp_path
):
    """The page build keeps the models' predictions between builds: the page data from
    the kept predictions equals the data computed afresh; the file keeps the models in
    use only; a damaged file or a changed prediction code is computed afresh."""
    _, db = known_history
    conn = store.connect(db)
    try:
        fresh = advisor_report.page_data(conn)
        cache = tmp_path / "cache"
        assert advisor_report.page_data(conn, cache_dir=cache) == fresh
        kept_path = cache / "advisor-predictions.json"
        kept = json.loads(kept_path.read_text())
        assert len(kept["models"]) == 3 and all(kept["models"].values()), (
            "the three nights' models, each with its predictions"
        )
        # the second build answers from the file: a changed value there shows through
        fp, memo = next(iter(kept["models"].items()))
        kept["models"] = {fp: {k: v * 2 for k, v in memo.items()}, "gone": {"x": 1.0}}
        kept_path.write_text(json.dumps(kept))
        assert advisor_report.page_data(conn, cache_dir=cache) != fresh
        assert "gone" not in json.loads(kept_path.read_text())["models"]
        for damaged in ("{not json", json.dumps(dict(kept, code="another-version"))):
            kept_path.write_text(damaged)
            assert advisor_report.page_data(conn, cache_dir=cache) == fresh
    finally:
        conn.close()


def _nights_store(path, scales):
    """A store of one fastfs self-scaling model (and its rates) per night, at ``scales``."""
    conn = store.connect(path)
    for night, scale in enumerate(scales):
        cases = [selfscale_case("fastfs", known_model(scale), 0.08, 0.2)] + rate_cases(
            "fastfs", scale
        )
        store.ingest_report(conn, make_report(f"night{night}", START + night * DAY, cases))
    return conn


def test_the_kept_grid_of_a_changed_model_is_computed_afresh(tmp_path):
    """The form's grid is kept per model (its terms; the stored rates applied at each
    build): a build uses the kept terms of an unchanged model and computes afresh those
    of a model that changed (its digest no longer matches)."""
    cache = tmp_path / "cache"
    conn = _nights_store(tmp_path / "first.sqlite", (1.0, 0.8, 1.25))
    try:
        assert advisor_report.page_data(conn, cache_dir=cache) == advisor_report.page_data(conn)
    finally:
        conn.close()
    kept_path = cache / "advisor-predictions.json"
    kept = json.loads(kept_path.read_text())
    assert len(kept["grids"]) == 3 and all(g["terms"] for g in kept["grids"].values())
    # every kept throughput doubled (not the request-rate terms that divide them, one
    # process's and the smallest size): what a build reads from the file shows through
    rate_terms = 3 * len(advisor_report.DIRECTIONS)
    for grid in kept["grids"].values():
        grid["terms"] = [
            v if i < rate_terms and i % 3 != 0 else 2 * v
            for n, v in enumerate(grid["terms"])
            for i in [n % advisor_report.TERMS_PER_PROFILE]
        ]
    kept_path.write_text(json.dumps(kept))
    # the same history but the newest night's model changed (1.3x instead of 1.25x)
    conn = _nights_store(tmp_path / "changed.sqlite", (1.0, 0.8, 1.3))
    try:
        fresh = advisor_report.page_data(conn)["targets"][0]["throughput"]
        built = advisor_report.page_data(conn, cache_dir=cache)["targets"][0]["throughput"]
    finally:
        conn.close()
    assert built.keys() == fresh.keys()
    for key, point in fresh.items():
        for d in ("read", "write"):
            # the changed (newest) model's column is computed afresh ...
            assert built[key][d][0] == point[d][0], (key, d)
            # ... the two unchanged models' columns come from the (doubled) kept terms
            assert built[key][d][1:] == pytest.approx([2 * v for v in point[d][1:]]), (key, d)
