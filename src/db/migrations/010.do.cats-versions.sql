-- Versions, for HTTP's conditional requests (ETag, If-Match, If-None-Match).
--
-- Creates lock the count row before they insert: the tables are locked in
-- that order here too, so that a create of an instance still running the
-- earlier release never waits for this migration while holding what it needs.
LOCK TABLE cats_count, cats IN ACCESS EXCLUSIVE MODE;

-- A cat's version is a number from one sequence, taken anew by every write of
-- its data: no two versions of any cats are ever equal, so an ETag never
-- matches a cat created again under a deleted cat's id. A tag is the
-- database's random epoch and the version, so a database created again, whose
-- sequence starts over, never answers a tag of the one before.
CREATE SEQUENCE cats_versions;
ALTER TABLE cats ADD COLUMN version bigint NOT NULL DEFAULT nextval('cats_versions');
ALTER SEQUENCE cats_versions OWNED BY cats.version;

CREATE FUNCTION cats_new_version() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  NEW.version := nextval('cats_versions');
  RETURN NEW;
END
$$;
CREATE TRIGGER cats_new_version BEFORE UPDATE OF data ON cats
  FOR EACH ROW EXECUTE FUNCTION cats_new_version();

-- The collection's changes, for the list's ETag: one more for each transaction
-- that creates, writes or removes cats. Versions are taken in the order writes
-- start, not the order they commit, so a list read between two commits could
-- not tell them apart; this counter grows in commit order. The trigger is
-- deferred to the commit, after the transaction's last lock on a cat, so it
-- never holds the count row while waiting for a cat's row (creates take the
-- count row first and lock no stored cat): no two writes wait for each other
-- in a cycle. It counts once per transaction, however many rows it wrote.
ALTER TABLE cats_count ADD COLUMN changes bigint NOT NULL DEFAULT 0;
ALTER TABLE cats_count ADD COLUMN epoch text NOT NULL DEFAULT substr(md5(random()::text || clock_timestamp()::text), 1, 12);

CREATE FUNCTION cats_count_change() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF current_setting('cats.counted', true) IS DISTINCT FROM 'yes' THEN
    UPDATE cats_count SET changes = changes + 1;
    PERFORM set_config('cats.counted', 'yes', true);
  END IF;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER cats_changed AFTER INSERT OR UPDATE OF data OR DELETE ON cats
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION cats_count_change();

-- cats_merge (migration 4) and cats_merge_many (migration 5) as before, now
-- also answering the version each merge wrote. New names: instances of the
-- earlier release still call the old functions while they run, and their
-- merges still get new versions from the trigger above. The result columns
-- data and version are also variables; in the queries, those names mean the
-- columns.
CREATE FUNCTION cats_merge_versioned(cat_id bigint, field_keys text[], field_values text[], max_bytes bigint)
RETURNS TABLE (data json, version bigint)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH target AS MATERIALIZED (
    SELECT seq, data FROM cats WHERE id = cat_id ORDER BY seq LIMIT 1 FOR UPDATE
  ),
  stored AS (
    SELECT '"' || field.key || '"' AS key,
      replace(replace(replace(field.value::text, '\\', chr(1)), '\"', '"'), chr(1), '\') AS value,
      field.place
    FROM target, json_each(replace(replace(replace(replace(replace(target.data::text,
      '\\', chr(1)), '\"', chr(2)), '\', '\\'), chr(1), '\\\\'), chr(2), '\\\"')::json)
      WITH ORDINALITY AS field(key, value, place)
  ),
  sent AS (
    SELECT field.key, field.value, field.place
    FROM unnest(field_keys, field_values) WITH ORDINALITY AS field(key, value, place)
  ),
  fields AS (
    SELECT coalesce(stored.key, sent.key) AS key, coalesce(sent.value, stored.value) AS value,
      coalesce(stored.place, (SELECT count(*) FROM stored) + sent.place) AS place
    FROM stored FULL JOIN sent ON sent.key = stored.key
  ),
  merged AS (
    SELECT target.seq, '{' || string_agg(fields.key || ':' || fields.value, ',' ORDER BY
      -- An array index's number, else null: indices first, in ascending order.
      CASE WHEN fields.key !~ '^"(0|[1-9][0-9]{0,9})"$' THEN NULL
        WHEN btrim(fields.key, '"')::bigint <= 4294967294 THEN btrim(fields.key, '"')::bigint END,
      fields.place) || '}' AS json
    FROM target, fields GROUP BY target.seq
  ),
  written AS (
    UPDATE cats SET data = merged.json::json FROM merged
    WHERE cats.seq = merged.seq AND octet_length(merged.json) <= max_bytes
    RETURNING cats.data, cats.version
  )
  SELECT written.data, written.version FROM merged LEFT JOIN written ON true;
END
$$;

CREATE FUNCTION cats_merge_many_versioned(cat_ids bigint[], field_counts int[], field_keys text[], field_values text[], max_bytes bigint)
RETURNS TABLE (has_cat boolean, data json, version bigint)
LANGUAGE plpgsql
AS $$
DECLARE
  first int := 1;
  last int;
BEGIN
  FOR i IN 1 .. coalesce(array_length(cat_ids, 1), 0) LOOP
    last := first + field_counts[i] - 1;
    has_cat := null;
    data := null;
    version := null;
    SELECT true, merged.data, merged.version INTO has_cat, data, version
      FROM cats_merge_versioned(cat_ids[i], field_keys[first:last], field_values[first:last], max_bytes) AS merged(data, version);
    RETURN NEXT;
    first := last + 1;
  END LOOP;
END
$$;
