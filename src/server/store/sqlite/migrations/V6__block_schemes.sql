-- How each block's tickets are composed and committed (`block::Scheme`): blocks made before this
-- migration are scheme 1 (unsalted leaves, the composer of their time); new blocks say theirs.
ALTER TABLE blocks ADD COLUMN scheme INTEGER NOT NULL DEFAULT 1 CHECK (scheme IN (1, 2));
