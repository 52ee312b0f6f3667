"""The `scratchbench` command: argument parsing (main.py) and the suite runner (runner.py).

The top layer: it uses every other part and nothing imports it (see ARCHITECTURE.md).
"""
