-- Sessions: the denylist of access tokens and the refresh tokens, shared by
-- every instance on this database.

-- A denied access token (its jti) or session (its sid), until the last token
-- it denies would have expired; expired rows are deleted as new ones arrive.
CREATE TABLE revoked_tokens (
  id text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX revoked_tokens_expires_at_idx ON revoked_tokens (expires_at);

-- Refresh tokens by the SHA-256 hash of the token (the token itself is never
-- stored). A rotated token stays until it expires, so that its reuse is seen.
-- user_id is the user's id as JSON, so a number stays a number.
CREATE TABLE refresh_tokens (
  token_hash bytea PRIMARY KEY,
  session_id text NOT NULL,
  user_id text NOT NULL,
  username text NOT NULL,
  expires_at timestamptz NOT NULL,
  rotated boolean NOT NULL DEFAULT false
);
CREATE INDEX refresh_tokens_session_id_idx ON refresh_tokens (session_id);
CREATE INDEX refresh_tokens_expires_at_idx ON refresh_tokens (expires_at);
