"""scratchbench's ReFrame checks (the files here) and their library (lib/)."""
