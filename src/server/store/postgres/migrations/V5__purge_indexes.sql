-- What the purge of expired sessions and stale guests looks up (`Store::purge`). Sales write none of
-- these: the partial indexes hold only guests, demo credits and the operator's cash moves.
CREATE INDEX sessions_expiry ON sessions (expires_at);
CREATE INDEX sessions_player ON sessions (player_id);
CREATE INDEX players_guests ON players (created_at) WHERE guest;
CREATE INDEX transfers_demo_credit ON transfers (credit) WHERE kind = 'demo';
CREATE INDEX transfers_cash_debit ON transfers (debit) WHERE kind IN ('deposit', 'withdrawal');
CREATE INDEX transfers_cash_credit ON transfers (credit) WHERE kind IN ('deposit', 'withdrawal');
