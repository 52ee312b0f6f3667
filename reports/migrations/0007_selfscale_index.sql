-- scratchbench history store, version 7.
-- The self-scaling checks' figures (those whose declared chart carries a model) found
-- without reading every stored figure: the advisor reads them at every page build, and
-- a scan of the figures table grows with the history (1,000,000 figures, none of them
-- self-scaling, were a full scan per build).  The condition is the one
-- store.selfscale_figures asks, word for word: SQLite uses a partial index only then.
CREATE INDEX figures_selfscale ON figures(case_id) WHERE chart LIKE '%"selfscale"%';
