-- Secrets every instance of the server shares and keeps across restarts (the key that signs device
-- cookies), made once by the first instance that needs one.
CREATE TABLE server_secrets (
    name TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
