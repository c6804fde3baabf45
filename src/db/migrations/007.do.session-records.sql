-- One record per session (one login and every token refreshed from it), shared
-- by every instance on this database. Rotation locks the row, compares and bumps
-- its generation; ending a session marks the row ended and keeps it only while
-- its access tokens could live; a refresh whose session has no row is refused,
-- so an ended session never comes back. Refresh tokens are
-- not stored: each names its session and generation under a MAC. Times are
-- milliseconds since the epoch, from the service's clock. user_id is the user's
-- id as JSON, so a number stays a number.
-- Instances of the release before this one write refresh_tokens until they
-- stop: they wait here, so no token they rotate is lost when it is dropped.
LOCK TABLE refresh_tokens IN EXCLUSIVE MODE;

CREATE TABLE sessions (
  id text PRIMARY KEY,
  user_id text NOT NULL,
  username text NOT NULL,
  generation integer NOT NULL,
  created_at_ms bigint NOT NULL,
  last_used_at_ms bigint NOT NULL,
  address text NOT NULL,
  user_agent text NOT NULL,
  -- When the current refresh token expires; the row is swept a margin later.
  expires_at_ms bigint NOT NULL,
  -- The per-session refresh rate limit: the current window's start and count.
  window_start_ms bigint NOT NULL DEFAULT 0,
  window_count integer NOT NULL DEFAULT 0,
  ended boolean NOT NULL DEFAULT false,
  -- The SHA-256 hash of the refresh token a session held before this table
  -- existed: that token still refreshes once, as generation 0.
  legacy_token_hash bytea UNIQUE
);
CREATE INDEX sessions_user_idx ON sessions (user_id, created_at_ms);
CREATE INDEX sessions_expires_idx ON sessions (expires_at_ms);

-- The sessions that had a live refresh token keep it.
INSERT INTO sessions (id, user_id, username, generation, created_at_ms, last_used_at_ms, address, user_agent, expires_at_ms, legacy_token_hash)
SELECT DISTINCT ON (session_id) session_id, user_id, username, 0,
  (extract(epoch FROM now()) * 1000)::bigint, (extract(epoch FROM now()) * 1000)::bigint, '', '',
  (extract(epoch FROM expires_at) * 1000)::bigint, token_hash
FROM refresh_tokens
WHERE NOT rotated AND expires_at > now()
ORDER BY session_id, expires_at DESC;

DROP TABLE refresh_tokens;
