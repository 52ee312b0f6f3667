-- scratchbench history store, version 6.
-- How long the timed phase behind a figure lasted: the shortest over the figure's
-- repetitions, in seconds (NULL where the check does not report it), and whether that
-- was too short to time (scratchbench.figures.SHORTEST_TRUSTED_PHASE_S, the rule when
-- stored): such a figure is shown, marked, and never ranked nor judged.  Figures stored
-- before know no phase length.
ALTER TABLE figures ADD COLUMN phase_seconds REAL;
ALTER TABLE figures ADD COLUMN too_short INTEGER;
