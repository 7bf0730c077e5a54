-- The keys tickets are signed with live in the store, so that every server instance signs with the same
-- keys and a rotated key is seen by all. `kid` is the RFC 7638 thumbprint of the public key.
CREATE TABLE signing_keys (
    kid TEXT PRIMARY KEY,
    secret BLOB NOT NULL CHECK (length(secret) = 32),
    created_at INTEGER NOT NULL
);
