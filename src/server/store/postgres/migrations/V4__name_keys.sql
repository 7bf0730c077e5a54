-- Names are unique by their key (NFKC, case-folded, confusable skeleton: see `server::names`), so that
-- `Victim` or a lookalike cannot sit beside `victim`. Names made before keys were ASCII-only in practice:
-- their lower case is their key.
ALTER TABLE players ADD COLUMN name_key TEXT;
UPDATE players SET name_key = lower(name) WHERE name IS NOT NULL;
CREATE UNIQUE INDEX players_unique_name_key ON players (name_key);
