"""Numbers in words, one place for every layer: three significant digits with thousands
separators, sizes, rates and durations in the unit a reader expects, percentages,
dates; and sizes read from words (``parse_size``), the one size syntax of options,
descriptions and the kernel's arguments."""

import math
import re
from datetime import datetime, timezone
from typing import TypeGuard

KIB, MIB, GIB, TIB = 1024, 1024**2, 1024**3, 1024**4
#: byte units, each 1024 times the one before
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
#: time units in seconds, smallest first
TIME_UNITS = (
    ("ns", 1e-9),
    ("µs", 1e-6),
    ("us", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("min", 60.0),
    ("h", 3600.0),
)


def _finite(value: object) -> TypeGuard[float]:
    """A finite number (not a bool); mypy then knows the value is a number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number(value: float | str | None) -> str:
    """Three significant digits, thousands separators, no exponent:
    18364.2 -> '18,400', 902.4 -> '902', 1.5 -> '1.5', 0.012345 -> '0.0123'."""
    # A full page build formats a million stored figures: floats from 0.0001 to 1e15 take
    # the short way, '%.3g' (the same correct rounding as round() and '.Nf' below, the
    # exponent taken after rounding up too), which gives the same text (tests/test_units.py
    # compares the two ways).
    if type(value) is float and 1e-4 <= abs(value) < 1e15:  # NaN and inf compare false
        text = "%.3g" % value
        if "e" not in text:  # 0.0001 to 999: '%g' writes it as the general rule does
            return text
        # 1,000 and up ('1.84e+04'): an exact integer here, one of at most 21,600 texts
        thousands = _THOUSANDS.get(text)
        if thousands is None:
            thousands = _THOUSANDS[text] = f"{float(text):,.0f}"
        return thousands
    return _number_any(value)


#: number()'s text of each '%.3g' text of 1,000 or more (9 * 10 * 10 significant digits
#: times 12 exponents times 2 signs at most): formatted once, not for every figure
_THOUSANDS: dict[str, str] = {}


def _number_any(value: float | str | None) -> str:
    """number() of any value: the general rule (names, ints, the extremes)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if not _finite(value):
        return str(value)  # a name (a chart's x may be a placement, say)
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


def quantity(value: float | str | None, unit: str = "") -> str:
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
        for name, scale in (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
            if abs(seconds) >= {"h": 5400.0, "min": 90.0}.get(name, scale) or name == "µs":
                return f"{number(seconds / scale)} {name}"
    return f"{number(value)} {unit}".strip()


def size_words(n: float) -> str:
    """A number of bytes in words: 1048576 -> '1 MiB', 47008 -> '45.9 KiB', 3 -> '3 B',
    1073741000 -> '1 GiB' (never an exponent)."""
    return quantity(n, "B")


def size_token(n: float) -> str:
    """A size in a figure's name, short: 1048576 -> '1m', 65536 -> '64k', 1536 -> '1536'."""
    n = int(n)
    for unit, scale in (("g", GIB), ("m", MIB), ("k", KIB)):
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def duration_words(seconds: float | None) -> str:
    """A duration in words: under a minute with three significant digits (0.0042 -> '4.2 ms',
    3.76 -> '3.76 s', 0 -> '0 s'), from a minute on in whole hours, minutes and seconds
    (60 -> '1 min', 75 -> '1 min 15 s', 5400 -> '1 h 30 min')."""
    if not seconds or abs(seconds) < 60:
        return quantity(seconds, "s") if seconds else "0 s"
    hours, rest = divmod(int(round(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return " ".join(
        [f"{hours} h"] * bool(hours)
        + [f"{minutes} min"] * bool(minutes)
        + [f"{secs} s"] * bool(secs)
    )


#: size suffixes, lower case: k, m, g, t and KiB... are powers of 1024; kB, MB, GB, TB
#: powers of 1000 unless the caller's program means 1024 by them (GlusterFS does)
SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": KIB,
    "kib": KIB,
    "m": MIB,
    "mib": MIB,
    "g": GIB,
    "gib": GIB,
    "t": TIB,
    "tib": TIB,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
}


def parse_size(value: str | float, decimal: bool = True) -> int:
    """4096, '4k', '4 KiB', '1.5 GiB', '512m', '2 GB' -> bytes.  With ``decimal=False``
    kB, MB, GB and TB are powers of 1024 too.  ValueError, naming the value and what was
    expected, for anything else (a negative number, an unknown unit, a bool)."""
    if isinstance(value, bool):
        raise ValueError(
            f"size {value!r}: expected a number of bytes with an optional "
            "unit (4 GiB, 512m, 1048576)"
        )
    if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0:
        return int(value)
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", str(value))
    unit = match.group(2).lower() if match else None
    if not match or unit not in SIZE_UNITS:
        raise ValueError(
            f"size {value!r}: expected a number of bytes with an optional "
            "unit (4 GiB, 512m, 1048576)"
        )
    scale = (
        SIZE_UNITS[unit]
        if decimal or not unit.endswith("b") or unit == "b"
        else SIZE_UNITS[unit[0]]
    )
    return int(float(match.group(1)) * scale)


def percent(fraction: float | None, signed: bool = True) -> str:
    """-0.1612 -> '-16.1%', 0.004 -> '+0.4%': three significant digits at most, one
    decimal at least below 100%."""
    if not _finite(fraction):
        return "n/a"
    pct = fraction * 100
    text = f"{pct:.1f}" if abs(pct) < 100 else number(pct)
    return f"{'+' if signed and pct > 0 else ''}{text}%"


def change(before: float, after: float) -> float:
    """The relative change from before to after, as the numbers shown say it."""
    return (after - before) / abs(before) if before else math.nan


def date(ts: float | None) -> str:
    """A Unix time as the day it fell on (UTC): '2026-11-25'."""
    return datetime.fromtimestamp(ts or 0, timezone.utc).strftime("%Y-%m-%d")


def date_time(ts: float | None) -> str:
    """A Unix time as the pages write it (UTC, to the minute): '2026-11-25 04:30'."""
    return datetime.fromtimestamp(ts or 0, timezone.utc).strftime("%Y-%m-%d %H:%M")


def count_words(n: int, singular: str, plural: str | None = None) -> str:
    """'1 file', '2 files', '1,200 opens of existing files'."""
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"
