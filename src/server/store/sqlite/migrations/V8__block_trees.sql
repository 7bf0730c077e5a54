-- Each block's tree from level 3 up is what hands out inclusion proofs; recomputing it takes every
-- ticket of the block (seconds of every core). Its level 3, an eighth of the leaves, is kept here so
-- that a restart rebuilds the rest in milliseconds, after checking it against the block's root.
-- Blocks made before this migration gain theirs the first time a server builds it.
CREATE TABLE block_trees (
    emission INTEGER NOT NULL,
    block INTEGER NOT NULL,
    kept_level BLOB NOT NULL,
    PRIMARY KEY (emission, block),
    FOREIGN KEY (emission, block) REFERENCES blocks (emission, block)
);
