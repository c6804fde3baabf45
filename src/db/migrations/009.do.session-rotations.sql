-- When each session last rotated: the refresh token it replaced still gets the
-- session's current tokens within REFRESH_REUSE_WINDOW of that time. 0 for the
-- sessions of before (and the rotations of instances of the release before this
-- one, which do not set it): their previous token is then a reuse, as it was.
ALTER TABLE sessions ADD COLUMN rotated_at_ms bigint NOT NULL DEFAULT 0;
