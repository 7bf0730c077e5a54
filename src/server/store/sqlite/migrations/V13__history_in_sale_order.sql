-- A player's tickets in sale order, as both engines read them: by sale time, then by the running
-- total of stakes each ticket kept (a wallet's grows with every sale), then by id. It replaces the
-- index by sale time, a prefix of it.
DROP INDEX tickets_player;
CREATE INDEX tickets_player ON tickets(player_id, sold_at, stake_total, id);
