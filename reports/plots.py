"""Plot specifications for the pages: plain Plotly JSON (plotly's Python figure objects
validate every property: too slow at scale), and which plotly.js bundle a page needs.

* History: UMAMI's layout (NERSC): the latest value coloured by the quarter of the
  earlier runs it falls in, and a box plot of the earlier runs, drawn only from
  ``MIN_EARLIER_FOR_BOX`` earlier runs on: never from the latest value alone.
* Lines, bars (recent median with the recent range), 3-D surfaces with their heat maps.
* A page opens with at most ``SCREENFUL`` plots, with plotly's 2-D bundle unless a 3-D
  surface is on its first screen (``Plots.bundle``).
"""

import json
import math
import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from scratchbench import units

if TYPE_CHECKING:
    from reports.rankings import Standing

LOG_SCALE_RATIO = 30  # bars on a log axis when values differ by more than this
MIN_EARLIER_FOR_BOX = 4  # earlier runs before a box plot and quartile colours
QUARTILE_COLOURS = ["#c0392b", "#e67e22", "#9acd32", "#1e8449"]  # worst .. best quarter
QUARTILE_WORDS = ["worst quarter", "below median", "above median", "best quarter"]
LINE_COLOURS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
    "#d62728",
]
#: a line's dash: past the colours, and one per file system on the side-by-side page
LINE_DASHES = ["solid", "dash", "dot", "dashdot"]
#: Plotly's (d3's) way of writing a number as units.number does: three significant
#: digits, thousands separators, no exponent ("18,400", not "1.836e+4")
HOVER_NUMBER = ",.3~r"
#: plots open before the reader asks for more (a screenful: the rest are in a fold)
SCREENFUL = 4
# at most this many labelled ticks on a numeric x axis of a line chart: more overlap at
# the charts' width
MOST_TICKS = 6
#: plotly.js bundles: the full one (3-D surfaces), shipped by the plotly package, and the
#: cartesian one (2-D plots only), vendored in templates/ at the same version
PLOTLY_FULL, PLOTLY_CARTESIAN = "plotly.min.js", "plotly-cartesian.min.js"

fmt, when = units.number, units.date_time


def _quartile(earlier, latest, higher):
    """0..3: the quarter of the earlier runs the latest value falls in, 3 = best."""
    if len(earlier) < MIN_EARLIER_FOR_BOX:
        return None
    q1, q2, q3 = statistics.quantiles(earlier, n=4)
    position = 0 if latest < q1 else 1 if latest < q2 else 2 if latest < q3 else 3
    return position if higher else 3 - position


def _box(values):
    """Plotly box statistics precomputed (Tukey fences): small pages, fast plots."""
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    iqr = q3 - q1
    return {
        "q1": [q1],
        "median": [median],
        "q3": [q3],
        "lowerfence": [min(v for v in values if v >= q1 - 1.5 * iqr)],
        "upperfence": [max(v for v in values if v <= q3 + 1.5 * iqr)],
    }


def _time_range(stamps):
    """A date axis that never zooms into milliseconds: at least two hours wide."""
    lo, hi = min(stamps), max(stamps)
    pad = max((hi - lo) * 0.05, 3600)
    return [(lo - pad) * 1000, (hi + pad) * 1000]


def history_plot(
    lines: Sequence[tuple[str, Sequence[tuple[float, float, str]]]],
    unit: str,
    higher: bool,
    short_latest: Collection[str] = (),
) -> tuple[dict[str, Any], list[tuple[str, float, str | None]]]:
    """UMAMI's layout: the history on the left with the latest value marked and coloured
    by the quarter of earlier runs it falls in; a box plot of the earlier runs on the
    right (from MIN_EARLIER_FOR_BOX earlier runs on).  lines: [(name, [(t, v, run)])];
    short_latest: the lines whose latest value was timed in a phase too short to trust,
    which get no quarter (their place among earlier runs would be noise).
    Returns (spec, [(name, latest, quartile words or None)])."""
    data: list[dict[str, Any]]
    data, notes, stamps = [], [], []
    boxes = any(len(points) - 1 >= MIN_EARLIER_FOR_BOX for _, points in lines)
    # One run so far: its value over its date, not a dot lost on a time axis of minutes.
    single = len({t for _, points in lines for t, _, _ in points}) == 1
    styles = _line_styles([name for name, _ in lines], None)
    for name, points in lines:
        short = name in short_latest
        traces, note = _history_traces(
            name, points, styles[name], unit, higher, single, boxes, short
        )
        data += traces
        notes.append(note)
        stamps += [t for t, _, _ in points]
    return {"data": data, "layout": _history_layout(lines, unit, boxes, single, stamps)}, notes


def _history_traces(
    name: str,
    points: Sequence[tuple[float, float, str]],
    style: Mapping[str, str],
    unit: str,
    higher: bool,
    single: bool,
    boxes: bool,
    short: bool,
) -> tuple[list[dict[str, Any]], tuple[str, float, str | None]]:
    """One line's traces (its history, its latest value marked and, with enough earlier
    runs, their box beside it) and its note (name, latest, quartile words or None; None
    too when the latest value's phase was too short to trust).  style: the line's colour
    and dash (_line_styles)."""
    data: list[dict[str, Any]] = []
    colour = style["color"]
    xs = [f"{when(t)} UTC" if single else int(t * 1000) for t, _, _ in points]
    ys = [v for _, v, _ in points]
    earlier, latest = ys[:-1], ys[-1]
    q = None if short else _quartile(earlier, latest, higher)
    note = (name, latest, QUARTILE_WORDS[q] if q is not None else None)
    marker = QUARTILE_COLOURS[q] if q is not None else colour
    data.append(
        {
            "type": "scatter",
            "mode": "lines+markers",
            "x": xs,
            "y": ys,
            "text": [r for _, _, r in points],
            "name": name,
            "line": dict(style, width=1),
            "marker": {"size": 5, "color": colour},
            "hovertemplate": f"{name}<br>%{{x{'' if single else '|%Y-%m-%d %H:%M'}}}"
            f"<br>%{{y:{HOVER_NUMBER}}} {unit}"
            "<br>run %{text}<extra></extra>",
        }
    )
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": [xs[-1]],
            "y": [latest],
            "showlegend": False,
            "name": f"{name}, latest",
            "marker": {"size": 11, "color": marker, "line": {"color": "#222", "width": 1}},
            "hovertemplate": f"{name}, latest: %{{y:{HOVER_NUMBER}}} {unit}<extra></extra>",
        }
    )
    if boxes and len(earlier) >= MIN_EARLIER_FOR_BOX:
        data.append(
            dict(
                _box(earlier),
                type="box",
                name=name,
                x=[name],
                xaxis="x2",
                showlegend=False,
                marker={"color": colour},
                hoverinfo="y",
            )
        )
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [name],
                "y": [latest],
                "xaxis": "x2",
                "showlegend": False,
                "name": f"{name}, latest",
                "marker": {
                    "size": 12,
                    "color": marker,
                    "symbol": "diamond",
                    "line": {"color": "#222", "width": 1},
                },
                "hovertemplate": f"latest: %{{y:{HOVER_NUMBER}}} {unit}<extra></extra>",
            }
        )
    return data, note


def _history_layout(
    lines: Sequence[tuple[str, Sequence[tuple[float, float, str]]]],
    unit: str,
    boxes: bool,
    single: bool,
    stamps: list[float],
) -> dict[str, Any]:
    """The history plot's layout: a date axis (a category for one run), the legend's
    rows above the plot, the box plots' axis at the right."""
    top, height = _room_for_legend([name for name, _ in lines], 220)
    layout: dict[str, Any]
    layout = {
        "height": height,
        "margin": {"l": 60, "r": 10, "t": top, "b": 35},
        "showlegend": len(lines) > 1,
        "legend": {"orientation": "h", "x": 0, "y": 1, "yanchor": "bottom", "font": {"size": 11}},
        "xaxis": {
            "domain": [0, 0.74 if boxes else 1],
            "type": "category",
            "title": {"text": "the only run so far", "font": {"size": 11}},
        }
        if single
        else {
            "domain": [0, 0.74 if boxes else 1],
            "type": "date",
            "range": _time_range(stamps),
            "nticks": 6,
        },
        "yaxis": {"rangemode": "tozero", "title": {"text": unit}},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#fbfbfb",
    }
    if boxes:
        layout["xaxis2"] = {
            "domain": [0.8, 1],
            "type": "category",
            "title": {"text": "earlier runs", "font": {"size": 11}},
        }
    return layout


def _axis_type(values):
    """'category' for names (a placement of readers, say: a numeric axis draws no point
    of them), 'log' for positive numbers over 16x apart, else 'linear'."""
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in values):
        return "category"
    positive = [v for v in values if isinstance(v, (int, float)) and v > 0]
    return (
        "log"
        if len(positive) == len(values) and positive and max(positive) / min(positive) >= 16
        else "linear"
    )


def _spaced_ticks(values, log, most=MOST_TICKS):
    """Of sorted x values, the ones to label: the first, then each at least 1/most of the
    axis beyond the last labelled (self-scaling's sizes crowd: 64 KiB, 96 KiB, 128 KiB
    ... labelled each would overlap), and the last in place of a too-close neighbour."""
    if len(values) <= 2:
        return list(values)
    where = [math.log10(v) for v in values] if log else list(values)
    gap = (where[-1] - where[0]) / most
    kept = [0]
    for i in range(1, len(values)):
        if where[i] - where[kept[-1]] >= gap * 0.999:
            kept.append(i)
    if kept[-1] != len(values) - 1:
        kept[-1 if len(kept) > 1 else len(kept) :] = [len(values) - 1]
    return [values[i] for i in kept]


def lines_plot(
    x_name: str,
    lines: Mapping[str, Mapping[Any, float]],
    unit: str,
    error_bars: Mapping[str, Mapping[Any, tuple[float, float]]] | None = None,
    groups: Mapping[str, tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """x against value, one line per name: lines = {name: {x: value}};
    error_bars = {name: {x: (low, high)}} for the spread of recent runs;
    groups = {name: (group, member)}: a colour per member and a dash per group (the
    side-by-side page: a line of a chart keeps its colour on every file system, and
    each file system has its dash), so that no two lines look alike."""
    data, xs_all = [], []
    names = sorted(lines, key=str)
    style = _line_styles(names, groups)
    for name in names:
        points = lines[name]
        xs = sorted(
            points, key=lambda x: (isinstance(x, str), x if not isinstance(x, str) else 0, str(x))
        )
        xs_all += xs
        trace = {
            "type": "scatter",
            "mode": "lines+markers",
            "name": str(name),
            "x": xs,
            "y": [points[x] for x in xs],
            "line": style[name],
            "hovertemplate": f"{name}<br>{x_name} %{{x}}<br>%{{y:{HOVER_NUMBER}}} {unit}<extra></extra>",
        }
        if error_bars and name in error_bars:
            spread = error_bars[name]
            trace["error_y"] = {
                "type": "data",
                "symmetric": False,
                "array": [spread[x][1] - points[x] for x in xs],
                "arrayminus": [points[x] - spread[x][0] for x in xs],
                "thickness": 1,
            }
        data.append(trace)
    kind = _axis_type(xs_all)
    ticks = list(dict.fromkeys(xs_all)) if kind == "category" else sorted(set(xs_all))
    xaxis = {"title": {"text": x_name}, "type": kind}
    if kind == "category":
        xaxis["categoryorder"] = "array"
        xaxis["categoryarray"] = [str(x) for x in ticks]
    elif kind == "log" or len(ticks) <= 12:
        ticks = _spaced_ticks(ticks, log=kind == "log")
        xaxis.update(tickvals=ticks, ticktext=[fmt(x) for x in ticks])
    top, height = _room_for_legend([str(d["name"]) for d in data], 250)
    return {
        "data": data,
        "layout": {
            "height": height,
            "margin": {"l": 60, "r": 10, "t": top, "b": 45},
            "showlegend": len(data) > 1,
            "legend": {"orientation": "h", "x": 0, "y": 1, "yanchor": "bottom"},
            "xaxis": xaxis,
            "yaxis": {"title": {"text": unit}, "rangemode": "tozero"},
        },
    }


def _line_styles(
    names: Sequence[Any], groups: Mapping[str, tuple[str, str]] | None
) -> dict[Any, dict[str, str]]:
    """{name: Plotly line style}: the colours in turn, and past the last colour the next
    dash; with ``groups``, a colour per member and a dash per group (unless two lines
    would then look alike: more members than colours or more groups than dashes)."""
    members = sorted({groups[n][1] for n in names}) if groups else []
    kinds = sorted({groups[n][0] for n in names}) if groups else []
    if not groups or len(members) > len(LINE_COLOURS) or len(kinds) > len(LINE_DASHES):
        return {
            name: {
                "color": LINE_COLOURS[i % len(LINE_COLOURS)],
                "dash": LINE_DASHES[i // len(LINE_COLOURS) % len(LINE_DASHES)],
            }
            for i, name in enumerate(names)
        }
    return {
        name: {
            "color": LINE_COLOURS[members.index(groups[name][1])],
            "dash": LINE_DASHES[kinds.index(groups[name][0])],
        }
        for name in names
    }


def surface_plots(
    x_name: str,
    y_name: str,
    cells: Mapping[tuple[Any, Any], float | None],
    unit: str,
    ticks: Mapping[str, Mapping[Any, str]] | None = None,
    marks: Iterable[Mapping[str, Any]] = (),
    zrange: tuple[float, float] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A 3-D surface and a heat map of value over (x, y); cells = {(x, y): value}.
    Missing cells (e.g. small records of large files) stay empty.  ``ticks``: the
    declared words of axis values ({"x": {65536: "64 KiB"}}); ``marks``: declared
    thresholds, drawn where they fall inside the measured range (see chart_marks);
    ``zrange``: (low, high) shared by plots set side by side, so their colours compare.
    Values spread over more than LOG_SCALE_RATIO are coloured on a log scale."""
    ticks = ticks or {}
    xs = sorted({x for x, _ in cells})
    ys = sorted({y for _, y in cells})
    z = [[cells.get((x, y)) for x in xs] for y in ys]
    values = [v for v in cells.values() if v is not None and math.isfinite(v)]
    low, high = zrange or (min(values, default=0), max(values, default=0))
    log = low > 0 and high / low > LOG_SCALE_RATIO
    colour = _colour_scale(low, high, log, unit)

    def words(axis: str, v: Any) -> str:
        return ticks.get(axis, {}).get(v) or fmt(v)

    text = [
        [
            f"{words('x', x)}, {words('y', y)}: {fmt(cells[(x, y)])} {unit}"
            if cells.get((x, y)) is not None
            else ""
            for x in xs
        ]
        for y in ys
    ]
    shade = [[math.log10(v) if log and v and v > 0 else v for v in row] for row in z]
    scene = _surface_scene(x_name, y_name, xs, ys, unit, log, low, high, words)
    surface: dict[str, Any]
    surface = {
        "data": [
            dict(
                colour,
                type="surface",
                x=xs,
                y=ys,
                z=z,
                surfacecolor=shade,
                text=text,
                hovertemplate="%{text}<extra></extra>",
            )
        ],
        "layout": {
            "height": 420,
            "margin": {"l": 0, "r": 0, "t": 30, "b": 0},
            "scene": dict(scene, camera={"eye": {"x": 1.7, "y": 1.7, "z": 1.0}}),
        },
    }
    heat: dict[str, Any]
    heat = {
        "data": [
            dict(
                colour,
                type="heatmap",
                x=[words("x", x) for x in xs],
                y=[words("y", y) for y in ys],
                z=shade,
                text=text,
                hovertemplate="%{text}<extra></extra>",
            )
        ],
        "layout": {
            "height": 420,
            "margin": {"l": 80, "r": 10, "t": 30, "b": 60},
            "xaxis": {"title": {"text": x_name}, "type": "category"},
            "yaxis": {"title": {"text": y_name}, "type": "category"},
        },
    }
    for mark in marks:
        _draw_mark(surface, heat, mark, xs, ys, low, high)
    return surface, heat


def _surface_scene(x_name, y_name, xs, ys, unit, log, low, high, words):
    """The 3-D scene's axes: x and y ticked at the measured values in their declared
    words, z on a log or a rounded linear scale."""
    scene_axis = {"x": (x_name, xs), "y": (y_name, ys)}
    scene = {
        f"{a}axis": {
            "title": {"text": name},
            "type": _axis_type(values_),
            "tickvals": values_,
            "ticktext": [words(a, v) for v in values_],
        }
        for a, (name, values_) in scene_axis.items()
    }
    scene["zaxis"] = {"title": {"text": unit}, "type": "log" if log else "linear"}
    if log:
        scene["zaxis"]["dtick"] = 1  # a tick per power of ten, no crowded minor labels
    if high > low and log:
        scene["zaxis"]["range"] = [math.log10(low), math.log10(high)]
    elif high > low:
        # Ticks above zero only (a "0" sits on the corner where the x and y labels
        # meet) and room above the top one (at the very top its label was cut: "000").
        values_ = _round_ticks(high)
        scene["zaxis"].update(
            range=[0, max(high, values_[-1]) * 1.1],
            tickvals=values_,
            ticktext=[fmt(v) for v in values_],
        )
    return scene


def _draw_mark(surface, heat, mark, xs, ys, low, high):
    """Draw a declared threshold where it falls inside the measured range: a plane and
    its label on the surface, a dashed line and its label on the heat map."""
    axis = mark["axis"]
    position = _category_position(xs if axis == "x" else ys, mark["value"])
    if position is None:
        return
    other = ys if axis == "x" else xs
    plane = (
        {"x": [[mark["value"]] * 2] * 2, "y": [[other[0], other[-1]]] * 2}
        if axis == "x"
        else {"y": [[mark["value"]] * 2] * 2, "x": [[other[0], other[-1]]] * 2}
    )
    bottom, top = (low, high) if high > low else (low or 0, (low or 0) + 1)
    surface["data"].append(
        dict(
            plane,
            type="surface",
            z=[[bottom, bottom], [top, top]],
            opacity=0.25,
            showscale=False,
            colorscale=[[0, "#c0392b"], [1, "#c0392b"]],
            name=mark["label"],
            hovertemplate=f"{escape(mark['label'])}<extra></extra>",
        )
    )
    where = (
        {"x": [mark["value"]], "y": [other[-1]]}
        if axis == "x"
        else {"y": [mark["value"]], "x": [other[-1]]}
    )
    surface["data"].append(
        dict(
            where,
            type="scatter3d",
            mode="text",
            z=[top],
            text=[mark["label"]],
            showlegend=False,
            hoverinfo="skip",
            textfont={"color": "#c0392b"},
        )
    )
    line = {"type": "line", "line": {"color": "#c0392b", "width": 2, "dash": "dash"}}
    note = {"text": mark["label"], "showarrow": False, "font": {"color": "#c0392b"}}
    if axis == "x":
        heat["layout"].setdefault("shapes", []).append(
            dict(line, xref="x", yref="paper", x0=position, x1=position, y0=0, y1=1)
        )
        heat["layout"].setdefault("annotations", []).append(
            dict(note, xref="x", yref="paper", x=position, y=1.02, yanchor="bottom")
        )
    else:
        heat["layout"].setdefault("shapes", []).append(
            dict(line, xref="paper", yref="y", y0=position, y1=position, x0=0, x1=1)
        )
        heat["layout"].setdefault("annotations", []).append(
            dict(note, xref="paper", yref="y", y=position, x=1, xanchor="right")
        )


def _round_ticks(high, count=4):
    """About ``count`` round values above zero up to ``high``: 8000 -> 2000 ... 8000."""
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [step * i for i in range(1, int(high // step) + 1)] or [high]


def _colour_scale(low, high, log, unit):
    """The colour scale of a surface and its heat map: linear, or over log10 of the values
    with ticks at powers of ten (in the values' own unit)."""
    scale = {"colorscale": "Viridis", "colorbar": {"title": {"text": unit}}}
    if high <= low:
        return scale
    if not log:
        return dict(scale, cmin=low, cmax=high, zmin=low, zmax=high)
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    scale["colorbar"].update(
        tickvals=list(range(first, last + 1)),
        ticktext=[fmt(10.0**k) for k in range(first, last + 1)],
    )
    scale["colorbar"]["title"]["text"] = f"{unit} (log scale)"
    bounds = {"cmin": math.log10(low), "cmax": math.log10(high)}
    return dict(scale, **bounds, zmin=bounds["cmin"], zmax=bounds["cmax"])


def _category_position(values, value):
    """Where a value falls among sorted axis values, as a fractional index (interpolated
    on a log scale for log axes), or None outside them."""
    if not values or value < values[0] or value > values[-1]:
        return None
    for i in range(len(values) - 1):
        a, b = values[i], values[i + 1]
        if a <= value <= b:
            if _axis_type(values) == "log":
                return i + math.log(value / a) / math.log(b / a)
            return i + (value - a) / (b - a)
    return float(len(values) - 1)


def bars_plot(
    categories: Sequence[str],
    traces: Sequence[tuple[str, Mapping[str, "Standing | None"]]],
    unit: str,
    highlight: str | None = None,
    width: int = 480,
) -> tuple[dict[str, Any], bool]:
    """Bars of the recent median with the recent range as error bars.
    traces: [(name, {category: Standing})]; a log axis when values differ by orders;
    width: the narrowest the plot is drawn (labels and legend are laid out for it)."""
    data, values = [], []
    for i, (name, by_category) in enumerate(traces):
        ys, lo, hi, colours = [], [], [], []
        for c in categories:
            s = by_category.get(c)
            ys.append(s.median if s else None)
            lo.append(s.median - s.low if s else 0)
            hi.append(s.high - s.median if s else 0)
            colours.append(
                "#1e8449" if highlight and c == highlight else LINE_COLOURS[i % len(LINE_COLOURS)]
            )
            if s:
                values += [s.low, s.high]
        data.append(
            {
                "type": "bar",
                "name": str(name),
                "x": list(categories),
                "y": ys,
                "marker": {"color": colours},
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": hi,
                    "arrayminus": lo,
                    "thickness": 1.2,
                    "color": "#222",
                },
                "hovertemplate": f"{name}<br>%{{x}}<br>median %{{y:{HOVER_NUMBER}}} {unit}"
                "<extra></extra>",
            }
        )
    positive = [v for v in values if v and v > 0]
    log = (
        bool(positive)
        and len(positive) == len(values)
        and max(positive) / min(positive) > LOG_SCALE_RATIO
    )
    # Long names of variants wrapped to the width of their bar group, and the room for
    # them and for the legend's rows added to the plot's height, not taken from it
    # (labels drawn over each other and a plot squeezed to 70 px, before).
    per_group = max(12, int(width / max(1, len(categories)) / CHAR_PX))
    ticktext = [_wrap(str(c), per_group) for c in categories]
    label_lines = max((t.count("<br>") + 1 for t in ticktext), default=1)
    bottom = 25 + LINE_PX * label_lines
    top, height = _room_for_legend([str(name) for name, _ in traces], 230 + bottom, width)
    yaxis: dict[str, Any]
    yaxis = {
        "title": {"text": unit + (" (log scale)" if log else "")},
        "type": "log" if log else "linear",
    }
    if log:
        yaxis["dtick"] = 1  # a tick per power of ten, no crowded minor labels
    if not log:
        yaxis["rangemode"] = "tozero"
    return {
        "data": data,
        "layout": {
            "barmode": "group",
            "height": height,
            "margin": {"l": 70, "r": 10, "t": top, "b": bottom},
            "showlegend": len(traces) > 1,
            "legend": {"orientation": "h", "x": 0, "y": 1, "yanchor": "bottom"},
            "yaxis": yaxis,
            "xaxis": {
                "type": "category",
                "tickvals": list(categories),
                "ticktext": ticktext,
                "tickangle": 0,
            },
        },
    }, log


#: what a plot's text takes: a character of 12 px text, and a line of it
CHAR_PX, LINE_PX = 7, 18
#: a legend row as Chromium draws it (19-20 px; LINE_PX short of it let a legend of 18
#: rows reach into the plot)
LEGEND_ROW_PX = 20


def _wrap(text: str, width: int) -> str:
    """Text in lines of at most ``width`` characters (words kept whole), for a tick label."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join(lines + [line])


def _room_for_legend(names: Sequence[str], rest: int, width: int = 480) -> tuple[int, int]:
    """(top margin, figure height) for a plot whose horizontal legend of these names sits
    above it, ``rest`` pixels being the plot area and the bottom margin: the legend's rows
    add to the height and never squeeze the plot.  The height is also kept at least twice
    the legend's, because Plotly clips a legend above the plot to half the figure and
    scrolls it (a chart of 16 lines hid the last of them)."""
    legend = LEGEND_ROW_PX * _legend_rows(names, width) if len(names) > 1 else 0
    return 30 + legend, max(30 + legend + rest, 2 * (legend + 10))


def _legend_rows(names: Sequence[str], width: int) -> int:
    """Rows a horizontal legend of these names takes in ``width`` pixels.  Plotly puts
    them in one row when they fit, else in columns as wide as the widest name (a short
    name does not share a row with a long one)."""
    needs = [40 + CHAR_PX * len(name) for name in names]  # the symbol, the gap and the name
    if sum(needs) <= width:
        return 1
    return math.ceil(len(needs) / max(1, width // max(needs)))


class Plots:
    """Numbers the plots of one page, and says which plotly bundle its first screen
    needs: the cartesian one (a third of the full one's size) unless a 3-D surface is
    among the first ``SCREENFUL`` plots (folded surfaces load the full bundle when they
    are opened: pages.js)."""

    first_3d: int | None  # the number of the first 3-D surface added, if any

    def __init__(self, prefix: str = "p") -> None:
        self.prefix, self.count, self.first_3d = prefix, 0, None

    def add(self, spec: dict[str, Any], **info: Any) -> dict[str, Any]:
        self.count += 1
        if info.get("surface") and self.first_3d is None:
            self.first_3d = self.count
        return dict(info, id=f"{self.prefix}{self.count}", spec=spec)

    @property
    def bundle(self) -> str:
        """The plotly bundle the page loads with it."""
        return (
            PLOTLY_FULL
            if self.first_3d is not None and self.first_3d <= SCREENFUL
            else PLOTLY_CARTESIAN
        )


def plot_json(spec: Any) -> Markup:
    """A plot specification as JSON safe inside <script>: what Jinja's ``tojson`` does,
    without sorting keys or indenting (plots are most of a page's bytes and build time)."""
    text = json.dumps(spec, separators=(",", ":"), allow_nan=False)
    return Markup(
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("'", "\\u0027")
    )
