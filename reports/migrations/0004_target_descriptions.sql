-- scratchbench history store, version 4.
-- What each scratch target was, in the site's words, as the case ran ("GlusterFS SAN: 2
-- storage servers...", or "a plain directory ... NOT a network file system" when the
-- embedded SAN could not start), so the pages say what a figure was measured on.
ALTER TABLE cases ADD COLUMN scratch_description TEXT;
