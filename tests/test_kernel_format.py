"""The kernel's C sources are formatted as src/.clang-format says.

Fix a failure with: clang-format -i src/*.[ch] src/tests/*.c
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SRC


def test_kernel_sources_are_clang_formatted():
    tool = shutil.which("clang-format")
    if tool is None:
        pytest.skip("clang-format is not installed (ci/setup.sh installs Debian's clang-format)")
    sources = sorted(str(p) for p in Path(SRC).glob("*.[ch]")) + sorted(
        str(p) for p in Path(SRC).glob("tests/*.c")
    )
    assert len(sources) > 10, f"no kernel sources found under {SRC}"
    result = subprocess.run(
        [tool, "--dry-run", "--Werror", *sources], capture_output=True, text=True, cwd=SRC
    )
    assert result.returncode == 0, (
        "src/ is not formatted as src/.clang-format says (clang-format -i src/*.[ch] "
        "src/tests/*.c):\n" + result.stderr[:3000]
    )
