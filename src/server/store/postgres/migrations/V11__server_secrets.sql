-- SQLite's V11 in PostgreSQL: secrets the instances share.
CREATE TABLE server_secrets (
    name TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
