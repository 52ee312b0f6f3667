-- scratchbench history store, version 2.
-- Figures carry the declaration of the check that produced them (label, which way is
-- better, headline); cases carry their parameters from the run report's fields and
-- their description in words.  The workload tag (quick, nightly, acceptance) is no
-- longer a ReFrame parameter: it leaves the display name and becomes the last part of
-- the series key, so histories written before stay one series with those written after.
ALTER TABLE cases ADD COLUMN title TEXT;
ALTER TABLE cases ADD COLUMN variant TEXT;
ALTER TABLE cases ADD COLUMN workload_words TEXT;
ALTER TABLE cases ADD COLUMN scaling_parameter TEXT;
ALTER TABLE cases ADD COLUMN skip_reason TEXT;
ALTER TABLE figures ADD COLUMN label TEXT;
ALTER TABLE figures ADD COLUMN better TEXT;
ALTER TABLE figures ADD COLUMN headline TEXT;
ALTER TABLE figures ADD COLUMN chart TEXT;                 -- JSON: where the figure sits on a chart
UPDATE cases
   SET display_name = replace(display_name, ' %workload_tag=' || workload, ''),
       series = replace(series, ' %workload_tag=' || workload, '') || '|' || workload,
       params = json_remove(params, '$.workload_tag')
 WHERE workload IS NOT NULL;
-- Version 1 decided "better" from the unit; keep that for the figures it stored.
UPDATE figures
   SET better = CASE WHEN unit IN ('s', 'ms', 'us', '%', 'seconds') OR unit LIKE '%/op'
                     THEN 'lower' ELSE 'higher' END;
CREATE INDEX figures_headline ON figures(headline) WHERE headline IS NOT NULL AND headline != '';
