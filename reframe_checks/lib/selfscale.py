"""Seed 003's self-scaling I/O benchmark as a ReFrame check: the search runs inside the
job (reframe_checks/scripts/selfscale_search.py drives the kernel's selfscale mode), and
the check turns its result into declared figures.

One job per scratch target, on one node (the node's memory bounds uniqueBytes, as the
page cache it measures is the node's).  The figures:

* headline and performance variables: the throughput at each regime's focal point
  (with the repeated measurements as samples), uniqueBytes at the knee between the
  page cache and the device, the median and largest prediction error on held-out
  workloads, the variation of the repeated focal-point measurement, and the time the
  exploration took;
* the curves, one chart per parameter (uniqueBytes; sizeMean, readFrac, seqFrac and
  processNum with a line per regime), each curve point a figure named by its grid value
  (``curve_size_mean_64k_cache``) so that it keeps its history from night to night;
* each regime's focal point and the knee as markers on those charts.

Each of these declarations carries a ``selfscale`` entry in its chart (role, parameter,
regime, x in base units, the focal workload), from which
``scratchbench.selfscale.Model.from_figures`` rebuilds the prediction model out of the
history store.  Figures appear only when the search found them: a target whose curve
has no knee within the range (a memory file system, or a range bounded below the
page cache) reports one regime and no knee, and says so.
"""

import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from typing import Any

import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import fixture, run_after, run_before, sanity_function

from reframe_checks.lib.base import ScratchCheck
from reframe_checks.lib.kernel import KernelBuild
from reframe_checks.lib.parsers import ParseError
from scratchbench import paths
from scratchbench import selfscale as ss
from scratchbench.figures import FigureDeclaration
from scratchbench.units import KIB, MIB, size_words

RESULT = "selfscale.json"
REPORTS = "selfscale-reports"
DRIVER = paths.CHECKS_DIR / "scripts" / "selfscale_search.py"

CHART_TITLES = {
    p: f"Throughput against {ss.PAPER_NAMES[p]} (self-scaling, seed 003)" for p in ss.PARAMETERS
}


def curve_figure_name(parameter: str, value: float, regime: str | None = None) -> str:
    name = f"curve_{parameter}_{ss.value_token(parameter, value)}"
    return f"{name}_{regime}" if regime else name


def regime_words(regime: str, workload: dict[str, Any]) -> str:
    return f"{regime} regime (uniqueBytes {size_words(workload['unique_bytes'])})"


def search_options(params: Mapping[str, Any]) -> list[str]:
    """The search's own options (selfscale_search.py) from a workloads.yaml entry: its
    sizes, timing and rules, each default written here once (the check and
    ci/benchmarks/selfscale_exploration.py both launch the search with them)."""
    rules: dict[str, float | bool] = {}
    for key, default in (("max_rounds", 3), ("space_filling", 0)):
        value = params.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"selfscale {key}: expected a whole number, got {value!r}")
        rules[key] = value
    for key in ("focal_fraction", "memory_factor", "knee_drop", "regime_margin"):
        if key in params:
            rules[key] = float(params[key])
    for key in ("direction_curves", "size_curves", "direction_unique_curves"):
        if key in params:
            if not isinstance(params[key], bool):
                raise ValueError(f"selfscale {key}: expected true or false, got {params[key]!r}")
            rules[key] = params[key]
    options = {
        "unique-max": params.get("unique_max", "memory"),
        "size-max": params.get("size_max", "16m"),
        "duration": params.get("duration", 0.4),
        "warmup": params.get("warmup", 0.2),
        "passes": params.get("passes", 3),
        "request-window": params.get("request_window", 1.0),
        "request-passes": params.get("request_passes", 5),
        "fsync": params.get("fsync", "outside"),
        "repeat": params.get("repeat", 5),
        "validate": params.get("validate", 20),
        "validate-launches": params.get("validate_launches", 2),
        "validate-far": params.get("validate_far", 0),
        "revisit": params.get("revisit", 8),
        "rules": json.dumps(rules),
    }
    return [token for name, value in options.items() for token in (f"--{name}", str(value))]


class SelfScaleCheckBase(ScratchCheck):
    """The self-scaling search on one scratch target, driven from the job script."""

    kernel = fixture(KernelBuild, scope="environment")
    valid_prog_environs = ["+mpi"]
    workload_family = "selfscale"
    title = "Self-scaling I/O (Chen and Patterson, seed 003)"
    io_api = "posix"

    @run_after("setup")
    def set_layout(self) -> None:
        p = self.params
        self.layout(1, p.get("processes", "cores"))
        unique = (
            "up to 1.25 x the node's memory"
            if str(p.get("unique_max", "memory")) == "memory"
            else f"up to {p['unique_max']}"
        )
        window = (
            f"{p.get('requests')} requests"
            if p.get("requests")
            else f"{p.get('passes', 3)} windows of {p.get('duration', 0.4)} s per point"
        )
        self.workload_words = (
            f"uniqueBytes {unique}, processNum 1 to "
            f"{self.tasks_per_node_used}, {window}, at most "
            f"{p.get('max_rounds', 3)} rounds, {p.get('validate', 20)} "
            "held-out workloads"
            + (
                f", {p['validate_far']} per distance band past the measured range"
                if p.get("validate_far")
                else ""
            )
        )

    @run_before("run")
    def set_driver_command(self) -> None:
        """The driver runs once in the batch script; it launches the kernel itself,
        with the launcher the partition would have used."""
        launch = " ".join(self.job.launcher.run_command(self.job).split())
        self.job.launcher = getlauncher("local")()
        self.executable = shlex.quote(sys.executable)
        self.executable_opts = [
            shlex.quote(str(DRIVER)),
            "--kernel",
            shlex.quote(self.kernel.binary),
            "--launcher",
            shlex.quote(launch),
            # a template such as $MYSANSCRATCH is expanded by the job's shell
            "--dir",
            f'"{self.scratch_path}"',
            "--processes",
            str(self.num_tasks),
            "--out",
            RESULT,
            "--reports",
            REPORTS,
            *(shlex.quote(option) for option in search_options(self.params)),
        ]
        self.keep_files = [RESULT, REPORTS]

    def search_result(self) -> dict[str, Any]:
        def parse(text: str) -> dict[str, Any]:
            data = json.loads(text)
            if data.get("schema") != "scratchbench-selfscale 1":
                raise ValueError(
                    f"{RESULT}: schema {data.get('schema')!r}, expected 'scratchbench-selfscale 1'"
                )
            return data

        return self.parsed_output(
            RESULT, _guard(parse), "the search died before writing its result"
        )

    @sanity_function
    def search_completed(self) -> Any:
        result = self.search_result()
        if result.get("error"):
            raise sn.SanityError(f"the self-scaling search failed: {result['error']['message']}")
        problems = []
        for name in ("exploration", "validation"):
            if not result.get(name):
                problems.append(f"{RESULT} has no {name}")
        return sn.assert_false(problems, msg="; ".join(problems))

    # ---- figures, declared from what the search found -----------------------------------
    @run_before("performance")
    def declare_found_figures(self) -> None:
        if self.is_dry_run() or not os.path.isfile(os.path.join(self.stagedir, RESULT)):
            return
        try:
            result = self.search_result()
        except sn.SanityError:
            return
        if result.get("error") or not result.get("exploration") or not result.get("validation"):
            return
        figures, samples = declared_figures(result)
        for name, (value, declaration) in figures.items():
            self.add_figure(name, declaration, _constant(value))
        self.samples = dict(self.samples, **samples)
        # the throughputs, request rates and the request share from them are timed over
        # windows of --duration (the model's figures are no timed phase)
        if not self.params.get("requests"):
            window = float(self.params.get("duration", 0.4))
            self.phase_seconds = dict(
                self.phase_seconds,
                **{
                    name: window
                    for name in figures
                    if name.startswith(("focal_throughput_", "request_"))
                },
            )
        # the first pass is timed over the probe's footprint, however long that took
        probe = result.get("reopen") or {}
        if "first_pass_read_rate" in figures:
            self.phase_seconds = dict(
                self.phase_seconds,
                first_pass_read_rate=probe["unique_bytes"] / probe["first_pass_Bps"],
            )


#: the pages' x axes: sizes in MiB and KiB read better than in bytes
AXES = {
    "unique_bytes": ("uniqueBytes (MiB touched per node)", MIB),
    "size_mean": ("sizeMean (mean request size, KiB)", KIB),
}


def _chart(parameter: str, x: float, line: str, meta: dict[str, Any]) -> dict[str, Any]:
    """A point on a parameter's chart; ``selfscale`` holds it for the model, with x in
    bytes (or a fraction, or processes) and the value's factor to bytes/s."""
    words, scale = AXES.get(parameter, (ss.AXIS_WORDS[parameter], 1.0))
    return {
        "title": CHART_TITLES[parameter],
        "kind": "lines",
        "x": [words, round(x / scale, 6) if scale != 1.0 else x],
        "line": line,
        "selfscale": dict(meta, parameter=parameter, x=x, to_base=MIB),
    }


def declared_figures(
    result: dict[str, Any],
) -> tuple[dict[str, tuple[float, FigureDeclaration]], dict[str, list[float]]]:
    """({name: (value, FigureDeclaration)}, {name: [samples]}) of a search result: what
    a self-scaling check stores (values in MiB/s, %, MiB and s)."""
    exploration = ss.Exploration.from_dict(result["exploration"])
    validation = ss.Validation.from_dict(result["validation"])
    model = exploration.model
    out: dict[str, tuple[float, FigureDeclaration]] = {}

    def add(name: str, value: float, **declaration: Any) -> None:
        out[name] = (float(value), FigureDeclaration(**declaration))

    _curve_figures(add, model)
    _marker_figures(add, model)
    # the performance variables
    samples: dict[str, list[float]] = {}
    _focal_variables(add, exploration, samples)
    _model_figures(add, result, exploration, validation)
    return out, samples


#: a new open that keeps at least this share of a file's cached pages keeps the cache
#: (the kernel's --prime reads a footprint less than 90% cached)
REOPEN_KEPT = 0.9


def _request_words(direction, rates):
    """Where the request-rate probe's requests of a direction went: reads over a
    footprint the page cache holds, writes extending a new file (the kernel's
    --append) up to that size."""
    touched = ss.size_words(rates["unique_bytes"])
    if direction == "write":
        return f"appending to a new file of up to {touched} (in the page cache)"
    return f"{touched} touched (in the page cache)"


def _share_label(kind, direction, rates):
    """The label of a request-rate probe's share figure: the fixed share (against the
    larger size) or the unit's time against the smallest size's."""
    size = ss.size_words(rates["size"])
    where = f"sequential, 1 process, {_request_words(direction, rates)}"
    if kind == "fixed":
        return (
            f"Share of a {size} {direction} request's time that does not grow with its "
            f"bytes (against {ss.size_words(rates['larger_size'])} requests, {where})"
        )
    unit = ss.size_words(rates["unit_size"])
    return f"Time of a {unit} {direction} request as a share of a {size} one's ({where})"


def _reopen_figures(add: Callable[..., None], probe: dict[str, Any] | None) -> None:
    """What a new open does to a file's cached pages (the search's reopen probe): the
    share it dropped, and where it dropped some, the rate of the first pass that read
    them again (the advisor charges a job's first read of each file it opens at it)."""
    if not probe or probe.get("kept") is None:
        return
    footprint = ss.size_words(probe["unique_bytes"])
    add(
        "cache_dropped_at_reopen",
        100.0 * (1.0 - probe["kept"]),
        unit="%",
        better="lower",
        role="reopen_cache_dropped",
        label=f"Share of a file's cached pages dropped by a new open "
        f"({ss.size_words(probe['cached_bytes'])} cached, 1 process)",
    )
    # where the open kept the cache, the probe's first pass read what no launch had
    # cached: a device's rate, which no job's reopen pays
    if probe.get("first_pass_Bps") and probe["kept"] < REOPEN_KEPT:
        add(
            "first_pass_read_rate",
            probe["first_pass_Bps"] / MIB,
            unit="MiB/s",
            better="higher",
            role="first_pass_read_Bps",
            label=f"Read of a freshly opened file, first pass ({footprint}, 4 MiB requests, "
            "1 process)",
        )


def _curve_figures(add: Callable[..., None], model: ss.Model) -> None:
    """The measured curves: uniqueBytes's, and each regime's of every parameter."""
    # the uniqueBytes lines: the focal one; the direction uniqueBytes curves (readFrac 1
    # and 0); the size curves (uniqueBytes at other sizeMean values, ss.size_curve_sizes,
    # named by their size, which stays put from night to night where the focal one moves)
    focal = model.unique_curve
    lines: list[tuple[ss.Curve, str, str, dict[str, Any]]] = [
        (
            focal,
            "",
            f"sizeMean {size_words(focal.fixed['size_mean'])} (focal)"
            if "size_mean" in focal.fixed
            else "",
            {},
        )
    ]
    for direction, c in model.direction_unique.items():
        only = f"{direction}s only (readFrac {ss.DIRECTIONS[direction]:g})"
        lines.append((c, f"_{direction}", only, {"direction": direction}))
    for c in model.size_curves:
        size = c.fixed["size_mean"]
        token = ss.value_token("size_mean", size)
        lines.append((c, f"_size_{token}", f"sizeMean {size_words(size)}", {"size_line": size}))
    for c, suffix, words, more in lines:
        meta = {"role": "curve", "regime": None, "fixed": c.fixed, **more}
        for x, y in zip(c.xs, c.ys):
            add(
                curve_figure_name("unique_bytes", x) + suffix,
                y / MIB,
                unit="MiB/s",
                better="higher",
                label=f"Throughput at uniqueBytes {size_words(x)}" + (f", {words}" if more else ""),
                chart=_chart(
                    "unique_bytes", x, f"measured, {words}" if words else "measured", meta
                ),
            )
    for regime, r in model.regimes.items():
        line = regime_words(regime, r.focal.as_dict())
        # the shape curves, then the direction curves (readFrac 1 and 0)
        curves = [(c, None) for c in r.curves.values()] + [
            (c, d) for d, by_parameter in r.directions.items() for c in by_parameter.values()
        ]
        for c, direction in curves:
            only = (
                f", {direction}s only (readFrac {ss.DIRECTIONS[direction]:g})" if direction else ""
            )
            meta = {"role": "curve", "regime": regime, "fixed": c.fixed}
            if direction:
                meta["direction"] = direction
            for x, y in zip(c.xs, c.ys):
                add(
                    curve_figure_name(c.parameter, x, regime)
                    + (f"_{direction}" if direction else ""),
                    y / MIB,
                    unit="MiB/s",
                    better="higher",
                    label=f"Throughput at {ss.PAPER_NAMES[c.parameter]} "
                    f"{ss.value_words(c.parameter, x)}, {regime} regime{only}",
                    # "fixed", the other parameters it was measured at: the rebuilt
                    # model's overlap of reads and writes and its ceiling read them
                    chart=_chart(c.parameter, x, line + only, meta),
                )


def _marker_figures(add: Callable[..., None], model: ss.Model) -> None:
    """Each regime's focal point and the knee, as markers on the charts."""
    # each regime's focal point, as a marker on every chart; the one on the uniqueBytes
    # chart carries the whole focal workload (the model needs it), the cache regime's
    # also every point the search measured (the model's correction)
    for regime, r in model.regimes.items():
        focal = r.focal.as_dict()
        meta: dict[str, Any] = {"role": "focal", "regime": regime, "workload": focal}
        if regime == "cache" and model.points:
            meta["points"] = ss.points_as_rows(model.points)
        add(
            f"focal_unique_bytes_{regime}",
            r.throughput / MIB,
            unit="MiB/s",
            better="higher",
            label=f"Throughput at the focal point, {regime} regime ({r.focal.words()})",
            chart=_chart(
                "unique_bytes",
                focal["unique_bytes"],
                f"focal point, {regime} regime",
                meta,
            ),
        )
        for parameter, c in r.curves.items():
            x = focal[parameter]
            add(
                f"focal_{parameter}_{regime}",
                c.at(x) / MIB,
                unit="MiB/s",
                better="higher",
                label=f"Focal {ss.PAPER_NAMES[parameter]} of the {regime} regime: "
                f"{ss.value_words(parameter, x)}",
                chart=_chart(
                    parameter,
                    x,
                    f"focal point, {regime} regime",
                    {"role": "marker", "regime": regime},
                ),
            )
    if model.knee:
        knee = model.knee
        add(
            "knee_throughput",
            knee.throughput / MIB,
            unit="MiB/s",
            better="higher",
            label=f"Throughput at the knee, uniqueBytes {size_words(knee.unique_bytes)}",
            chart=_chart(
                "unique_bytes",
                knee.unique_bytes,
                "knee",
                {
                    "role": "knee",
                    "cache_level": knee.cache_level / MIB,
                    "device_level": knee.device_level / MIB,
                    # what the page cache held of the largest uniqueBytes: an
                    # upper regime it held is no "beyond the page cache"
                    "top_resident": knee.top_resident,
                },
            ),
        )


def _focal_variables(
    add: Callable[..., None], exploration: ss.Exploration, samples: dict[str, list[float]]
) -> None:
    """Each regime's focal throughput (its repeats as samples) and their variation, and
    the knee."""
    for regime, r in exploration.model.regimes.items():
        headline = (
            "Self-scaling focal point, page cache"
            if regime == "cache"
            else "Self-scaling focal point, beyond the page cache"
        )
        # role "focal": where the search put the focal point differs between file
        # systems (4 KiB on one, 16 KiB on another), so its throughput is shown, never
        # ranked across them
        add(
            f"focal_throughput_{regime}",
            r.throughput / MIB,
            unit="MiB/s",
            better="higher",
            headline=headline,
            role="focal",
            # A label that does not move with the focal point: the pages and verdicts
            # follow a figure by its label, night after night (the focal workload itself
            # is on the charts' markers).
            label=f"Throughput at the {regime} regime's focal point, wherever the search put it",
        )
        if exploration.repeat.get(regime):
            samples[f"focal_throughput_{regime}"] = [v / MIB for v in exploration.repeat[regime]]
        cv = exploration.repeat_cv(regime)
        if cv is not None:
            add(
                f"focal_variation_{regime}",
                100.0 * cv,
                unit="%",
                better="lower",
                label=f"Variation (cv) of {len(exploration.repeat[regime])} repeated "
                f"measurements of the {regime} regime's focal point",
            )
    if exploration.model.knee:
        add(
            "knee_unique_bytes",
            exploration.model.knee.unique_bytes / MIB,
            unit="MiB",
            better="higher",
            headline="Self-scaling knee between page cache and device",
            role="knee",
            label="uniqueBytes where throughput falls from the page cache to the device (the knee)",
        )


def _model_figures(
    add: Callable[..., None],
    result: dict[str, Any],
    exploration: ss.Exploration,
    validation: ss.Validation,
) -> None:
    """The model's prediction errors, the request rates, the validation's noise and the
    search's time."""
    add(
        "prediction_error_median",
        100.0 * validation.median_error,
        unit="%",
        better="lower",
        headline="Self-scaling prediction error (median)",
        role="model_error_median",
        label=f"Median error of predicted throughput, {len(validation.workloads)} held-out "
        "workloads",
    )
    _median_interval_figures(add, validation)
    add(
        "prediction_error_max",
        100.0 * validation.max_error,
        unit="%",
        better="lower",
        role="model_error_max",
        label=f"Largest error of predicted throughput, {len(validation.workloads)} held-out "
        "workloads",
    )
    _far_error_figures(add, result.get("far_validation"))
    rates = result.get("request_rates") or {}
    for direction in ("read", "write"):
        if rates.get(direction):
            add(
                f"request_rate_{direction}",
                rates[direction],
                unit="ops/s",
                better="higher",
                role=f"{direction}_requests_per_s",
                label=f"{direction.capitalize()} requests per second, "
                f"{ss.size_words(rates['size'])} sequential, 1 process, "
                + _request_words(direction, rates),
            )
        for kind in ("fixed", "unit"):
            share = (rates.get(f"{kind}_share") or {}).get(direction)
            if rates.get(direction) and share is not None:
                add(
                    f"request_{kind}_share_{direction}",
                    100.0 * share,
                    unit="%",
                    better="lower",
                    role=f"{direction}_request_{kind}_share",
                    label=_share_label(kind, direction, rates),
                )
    _reopen_figures(add, result.get("reopen"))
    noises = (
        (
            "validation_spread",
            validation.spread,
            "how far one measurement of a held-out "
            "workload lies from the median of its passes (median)",
        ),
        (
            "validation_retest",
            validation.retest,
            "how far the held-out workloads measured "
            "again in a second launch lie from the first launch (median)",
        ),
        (
            "validation_drift",
            validation.drift,
            f"how far {len(validation.revisited)} of the search's own points measured "
            "again with the held-out workloads lie from the search's measurement (median: "
            "their noise and the target's drift together)",
        ),
    )
    for name, noise, words in noises:
        if noise is not None:
            add(
                name,
                100.0 * noise,
                unit="%",
                better="lower",
                label=f"Noise under the prediction error: {words}",
            )
    add(
        "exploration_time",
        result["timing"]["total_s"],
        unit="s",
        better="lower",
        label=f"Time of the exploration ({exploration.points_measured} points, "
        f"{len(exploration.rounds)} rounds) and its validation",
    )


def _median_interval_figures(add: Callable[..., None], validation: ss.Validation) -> None:
    """Both ends of the interval that holds the model's median error (none with too few
    held-out workloads)."""
    interval = validation.median_error_interval
    if not interval:
        return
    for end, value in zip(("low", "high"), interval[:2]):
        add(
            f"prediction_error_median_{end}",
            100.0 * value,
            unit="%",
            better="lower",
            role=f"model_error_median_{end}",
            label=f"{'Lower' if end == 'low' else 'Upper'} end of the interval that "
            f"holds the model's median error with {100 * interval[2]:.0f}% confidence "
            f"({len(validation.workloads)} held-out workloads: order statistics)",
        )


#: the far validation's chart: the model's error against the distance past its range
FAR_CHART_TITLE = "Self-scaling prediction error past the measured range"


def _far_error_figures(add: Callable[..., None], far: Mapping[str, Any] | None) -> None:
    """The median error of the far validation per parameter and distance band, each a
    point of one chart; its ``selfscale`` entry gives the rebuilt model its far errors."""
    if not far:
        return
    workloads = [ss.FarWorkload.from_dict(w) for w in far["workloads"]]
    errors = ss.far_errors(workloads, ss.Validation.from_dict(far["validation"]))
    lower = dict(zip(ss.FAR_BANDS, (1.0, *ss.FAR_BANDS)))
    for (parameter, band), (error, count) in sorted(errors.items()):
        add(
            f"prediction_error_far_{parameter}_{band:g}x",
            100.0 * error,
            unit="%",
            better="lower",
            role="model_error_far",
            label=f"Median error of predicted throughput, {count} held-out workload"
            f"{'s' if count != 1 else ''} with {ss.PAPER_NAMES[parameter]} "
            f"{lower.get(band, 1.0):g}x to {band:g}x past the measured range",
            chart={
                "title": FAR_CHART_TITLE,
                "kind": "lines",
                "x": ["times past the measured range", band],
                "line": ss.PAPER_NAMES[parameter],
                "selfscale": {
                    "role": "far_error",
                    "parameter": parameter,
                    "band": band,
                    "workloads": count,
                    "to_base": 0.01,
                },
            },
        )


def _constant(value: float) -> Callable[[], float]:
    return lambda: value


def _guard(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """JSON and schema errors as the ParseError parsed_output reports."""

    def wrapped(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise ParseError(f"{RESULT}: {exc}") from None

    return wrapped
