-- scratchbench history store, version 3.
-- A figure's declaration may say what it measures (its role, one of
-- scratchbench.figures.ROLES: "creations_per_s", "stage_in_bytes_per_s", ...), so that the
-- workload advisor finds the figures it computes with by what they mean, never by a
-- check's or a metric's name.  Figures stored before have no role.
ALTER TABLE figures ADD COLUMN role TEXT;
CREATE INDEX figures_role ON figures(role) WHERE role IS NOT NULL AND role != '';
