"""Numbers in words, one place for every layer: three significant digits with thousands
separators, sizes, rates and durations in the unit a reader expects, percentages,
dates.  (Older copies remain in reframe_checks/lib/base.py ``words``, selfscale.py
``size_words``, advisor.py ``seconds_words``; new code uses these.)"""

import math
from datetime import datetime, timezone

#: byte units, each 1024 times the one before
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
#: time units in seconds, smallest first
TIME_UNITS = (("ns", 1e-9), ("µs", 1e-6), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0),
              ("min", 60.0), ("h", 3600.0))


def _finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


def number(value):
    """Three significant digits, thousands separators, no exponent:
    18364.2 -> '18,400', 902.4 -> '902', 1.5 -> '1.5', 0.012345 -> '0.0123'."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if not _finite(value):
        return str(value)      # a name (a chart's x may be a placement, say)
    if value == 0:
        return "0"
    decimals = 2 - math.floor(math.log10(abs(value)))
    rounded = round(value, decimals)
    # rounding up may add a digit (999.6 -> 1,000): one decimal fewer then
    if rounded and math.floor(math.log10(abs(rounded))) > math.floor(math.log10(abs(value))):
        decimals -= 1
    if decimals <= 0:
        return f"{round(value, decimals):,.0f}"
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def quantity(value, unit=""):
    """A value with its unit scaled to read well: 18364 ops/s -> '18,400 ops/s',
    0.000902 s -> '902 µs', 1020 MiB -> '1,020 MiB' (sizes and rates of bytes move up
    a unit from 1,024 of it: 1536 MiB/s -> '1.5 GiB/s'), 5400 s -> '1.5 h'."""
    if not _finite(value):
        return f"{number(value)} {unit}".strip()
    base, per = (unit[:-2], "/s") if unit.endswith("/s") else (unit, "")
    if base in BYTE_UNITS:
        i = BYTE_UNITS.index(base)
        while abs(value) >= 1024 and i < len(BYTE_UNITS) - 1:
            value, i = value / 1024, i + 1
        while 0 < abs(value) < 1 and i > 0:
            value, i = value * 1024, i - 1
        return f"{number(value)} {BYTE_UNITS[i]}{per}"
    times = dict(TIME_UNITS)
    if unit in times:
        seconds = value * times[unit]
        for name, scale in (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3),
                            ("µs", 1e-6)):
            if abs(seconds) >= {"h": 5400.0, "min": 90.0}.get(name, scale) or name == "µs":
                return f"{number(seconds / scale)} {name}"
    return f"{number(value)} {unit}".strip()


def percent(fraction, signed=True):
    """-0.1612 -> '-16.1%', 0.004 -> '+0.4%': three significant digits at most, one
    decimal at least below 100%."""
    if not _finite(fraction):
        return "n/a"
    pct = fraction * 100
    text = f"{pct:.1f}" if abs(pct) < 100 else number(pct)
    return f"{'+' if signed and pct > 0 else ''}{text}%"


def change(before, after):
    """The relative change from before to after, as the numbers shown say it."""
    return (after - before) / abs(before) if before else math.nan


def date(ts):
    """A Unix time as the day it fell on (UTC): '2026-11-25'."""
    return datetime.fromtimestamp(ts or 0, timezone.utc).strftime("%Y-%m-%d")
