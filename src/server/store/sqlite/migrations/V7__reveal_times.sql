-- When each zone was uncovered (unix seconds), in the order of `revealed`: a recalled ticket shows its
-- steps. Tickets uncovered before this migration keep an empty list (their times were not kept).
ALTER TABLE tickets ADD COLUMN revealed_at TEXT NOT NULL DEFAULT '[]';
