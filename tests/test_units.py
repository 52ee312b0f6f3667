"""The one home of sizes and durations in words and of sizes read from words
(scratchbench/units.py): what the checks, the SAN, the advisor and the pages say."""

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
