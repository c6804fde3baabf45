-- Idempotency keys within bounds: each key counts against its client's quota
-- and against a cap on all keys, both in keys and in bytes. At its quota a
-- client's own oldest keys make way for its new one; at the cap, the oldest
-- keys of all go.

-- client: whose quota the key counts against (the user, or the client's
-- address when creates are public); a key recorded before this migration
-- counts against its scope. bytes: what the service counted the key as (its
-- texts as UTF-8 plus 512 for the bookkeeping). seq: the order keys were
-- recorded in, the same on every instance whatever their clocks say.
ALTER TABLE idempotency_keys ADD COLUMN client text;
UPDATE idempotency_keys SET client = scope;
ALTER TABLE idempotency_keys ALTER COLUMN client SET NOT NULL;
ALTER TABLE idempotency_keys ADD COLUMN bytes integer;
UPDATE idempotency_keys SET bytes = 512 + octet_length(scope) + octet_length(key) + octet_length(fingerprint)
  + octet_length(client) + octet_length(response);
ALTER TABLE idempotency_keys ALTER COLUMN bytes SET NOT NULL;
ALTER TABLE idempotency_keys ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;

-- A client's keys oldest first, with their sizes; all keys oldest first.
CREATE INDEX idempotency_keys_client_seq_idx ON idempotency_keys (client, seq) INCLUDE (bytes);
CREATE UNIQUE INDEX idempotency_keys_seq_idx ON idempotency_keys (seq);

-- The number of keys and their bytes in one row, kept by the triggers below,
-- so that the cap is checked without counting the table.
CREATE TABLE idempotency_keys_usage (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  keys bigint NOT NULL,
  bytes bigint NOT NULL
);
INSERT INTO idempotency_keys_usage (keys, bytes) SELECT count(*), coalesce(sum(bytes), 0) FROM idempotency_keys;

CREATE FUNCTION idempotency_keys_added() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  UPDATE idempotency_keys_usage AS usage SET keys = usage.keys + total.keys, bytes = usage.bytes + total.bytes
  FROM (SELECT count(*) AS keys, coalesce(sum(bytes), 0) AS bytes FROM added) AS total
  WHERE total.keys > 0;
  RETURN NULL;
END
$$;

CREATE FUNCTION idempotency_keys_removed() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  UPDATE idempotency_keys_usage AS usage SET keys = usage.keys - total.keys, bytes = usage.bytes - total.bytes
  FROM (SELECT count(*) AS keys, coalesce(sum(bytes), 0) AS bytes FROM removed) AS total
  WHERE total.keys > 0;
  RETURN NULL;
END
$$;

CREATE TRIGGER idempotency_keys_added AFTER INSERT ON idempotency_keys
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION idempotency_keys_added();
CREATE TRIGGER idempotency_keys_removed AFTER DELETE ON idempotency_keys
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION idempotency_keys_removed();

-- Records a key in the transaction that has just created its cat, and keeps
-- the keys within bounds: the keys past their lifetime go, then (the new key
-- recorded) the client's own oldest until the client is within its quota,
-- then the oldest of all until all are within the cap. A key larger than a
-- client may hold is not recorded: a repeat creates again, as after the
-- key's lifetime. The caller holds the row lock of cats_count (taken by the
-- create), so these calls run one at a time and the counts they read hold
-- until they commit.
CREATE FUNCTION idempotency_key_record(
  new_scope text, new_key text, new_client text, new_fingerprint text, new_response text, new_bytes integer,
  created_at bigint, expired_at bigint, client_max_keys bigint, client_max_bytes bigint, max_keys bigint, max_bytes bigint
)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  excess_keys bigint;
  excess_bytes bigint;
  doomed bigint[] := '{}';
  oldest record;
BEGIN
  DELETE FROM idempotency_keys WHERE created_at_ms <= expired_at;
  IF new_bytes > client_max_bytes OR new_bytes > max_bytes THEN
    RETURN;
  END IF;
  INSERT INTO idempotency_keys (scope, key, client, fingerprint, response, bytes, created_at_ms)
  VALUES (new_scope, new_key, new_client, new_fingerprint, new_response, new_bytes, created_at);

  -- Counted from the newest: a key goes when it and the newer ones are more than the quota holds.
  DELETE FROM idempotency_keys WHERE seq IN (
    SELECT seq FROM (
      SELECT seq, count(*) OVER newest_first AS keys_so_far, sum(bytes) OVER newest_first AS bytes_so_far
      FROM idempotency_keys WHERE client = new_client
      WINDOW newest_first AS (ORDER BY seq DESC)
    ) AS counted
    WHERE keys_so_far > client_max_keys OR bytes_so_far > client_max_bytes
  );

  SELECT keys - max_keys, bytes - max_bytes INTO excess_keys, excess_bytes FROM idempotency_keys_usage;
  IF excess_keys > 0 OR excess_bytes > 0 THEN
    FOR oldest IN SELECT seq, bytes FROM idempotency_keys ORDER BY seq LOOP
      EXIT WHEN excess_keys <= 0 AND excess_bytes <= 0;
      doomed := doomed || oldest.seq;
      excess_keys := excess_keys - 1;
      excess_bytes := excess_bytes - oldest.bytes;
    END LOOP;
    DELETE FROM idempotency_keys WHERE seq = ANY (doomed);
  END IF;
END
$$;
