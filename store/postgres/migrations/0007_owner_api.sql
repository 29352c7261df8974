-- Logs from any host (issue 25): an attempt's log stays in the state folder of the daemon that
-- ran it, and any other daemon reads it through that daemon's HTTP API. The owner row says
-- where: the base URL its API advertises (serve --advertise, default the listen address), ''
-- for an owner that serves none (a dags test process, a daemon of an older binary).
ALTER TABLE owners ADD COLUMN api TEXT NOT NULL DEFAULT '';
