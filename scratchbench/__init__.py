"""scratchbench: regression and benchmark harness for HPC scratch file systems."""

__version__ = "0.1.0"
