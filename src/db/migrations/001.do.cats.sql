-- The cats schema as it was before versioned migrations. Every statement is
-- idempotent, so a database created by that earlier start-up code is adopted
-- as it is: its tables, index and count row are kept, and this migration is
-- only recorded as applied.

-- seq keeps creation order; data is the whole record as JSON text, so key
-- order and values come back exactly as written.
CREATE TABLE IF NOT EXISTS cats (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id bigint NOT NULL,
  data json NOT NULL
);

-- Finds the earliest created cat with an id without a scan.
CREATE INDEX IF NOT EXISTS cats_id_seq_idx ON cats (id, seq);

-- The number of stored cats in one row, whose lock serializes creates so
-- that id = count + 1 holds across instances.
CREATE TABLE IF NOT EXISTS cats_count (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  count bigint NOT NULL
);
INSERT INTO cats_count (singleton, count) VALUES (true, 0) ON CONFLICT DO NOTHING;
