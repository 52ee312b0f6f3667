"""The one home of sizes and durations in words and of sizes read from words
(scratchbench/units.py): what the checks, the SAN, the advisor and the pages say."""

import math
import random

import pytest

from scratchbench import units


def test_sizes_in_words_and_tokens():
    assert units.size_words(1048576) == "1 MiB" and units.size_words(47008) == "45.9 KiB"
    assert units.size_words(3) == "3 B" and units.size_words(1023.9 * units.MIB) == "1,020 MiB"
    assert units.size_token(1048576) == "1m" and units.size_token(65536) == "64k"
    assert units.size_token(1536) == "1536" and units.size_token(4 * units.GIB) == "4g"


def test_durations_in_words():
    assert units.duration_words(0) == "0 s" and units.duration_words(0.0042) == "4.2 ms"
    assert units.duration_words(3.76) == "3.76 s" and units.duration_words(0.9996) == "1,000 ms"
    assert units.duration_words(60) == "1 min" and units.duration_words(75) == "1 min 15 s"
    assert units.duration_words(5400) == "1 h 30 min"


@pytest.mark.parametrize(
    "text,binary,decimal",
    [
        ("4k", 4096, 4096),
        ("4 KiB", 4096, 4096),
        ("1.5 GiB", 3 * 2**29, 3 * 2**29),
        ("512m", 2**29, 2**29),
        (4096, 4096, 4096),
        ("2 GB", 2 * 2**30, 2 * 10**9),
        ("64MB", 64 * 2**20, 64 * 10**6),
        ("0", 0, 0),
    ],
)
def test_sizes_read_from_words(text, binary, decimal):
    assert units.parse_size(text) == decimal
    assert units.parse_size(text, decimal=False) == binary


@pytest.mark.parametrize("bad", ["1x", "lots", "-1", -1, True, float("inf"), "4 k b"])
def test_a_bad_size_is_one_line_naming_it(bad):
    with pytest.raises(ValueError, match=r"^size .*: expected a number of bytes"):
        units.parse_size(bad)


def near_rounding_edges():
    """Floats where three-digit rounding can go either way or change the number of
    digits: the neighbours of 10**k, of 9.995 * 10**k (rounds up to the next power),
    of halves (1.005, 1.125, 2.5, 4.5), from 1e-20 to 1e20, and their negatives."""
    for k in range(-20, 21):
        for mantissa in (1.0, 9.995, 9.9949999, 9.9999999, 1.005, 1.125, 1.115, 2.5, 4.5, 9.5):
            x = y = float(f"{mantissa}e{k}")
            for _ in range(4):
                yield from (x, y, -x, -y)
                x, y = math.nextafter(x, math.inf), math.nextafter(y, -math.inf)


def test_number_short_way_writes_what_the_general_rule_writes():
    """number() takes a short way for the floats a page build formats a million of;
    every value must read exactly as the general rule writes it."""
    rng = random.Random(29)
    values = [
        *near_rounding_edges(),
        *(rng.uniform(-1, 1) * 10 ** rng.uniform(-20, 20) for _ in range(50_000)),
        *(round(rng.uniform(0, 2000), rng.randint(0, 4)) for _ in range(10_000)),
        0.0, -0.0, 1e-4, 0.99995e-4, 1e15, 999.5, 99.95, 0.9995, 5e-324, 1e300,
        math.nan, math.inf, -math.inf, 0, 7, -1234567, 10**20, True, None, "shared-dir",
    ]  # fmt: skip
    differing = [(v, units.number(v), units._number_any(v)) for v in values]
    differing = [d for d in differing if d[1] != d[2]]
    assert not differing, differing[:5]
    assert units.number(-18364.2) == "-18,400" and units.number(0.00012345) == "0.000123"
    assert units.number(9.9951) == "10" and units.number(-0.9996) == "-1"
