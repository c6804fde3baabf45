-- PUT as one call: lock the earliest created cat with the id, merge the fields
-- into its JSON text, and write it back when it fits the size limit. A
-- function, so that each session plans the statement once: planning it costs
-- several times what running it does.
--
-- field_keys and field_values are the JSON texts of the fields' keys and
-- values (JSON.stringify), in the order the merge writes them, id left out.
-- No row: no cat has the id. A null row: the merged cat would be larger than
-- max_bytes, and nothing was written. Otherwise the cat as merged and stored.
-- FOR UPDATE makes concurrent merges into one cat wait for each other; each
-- then merges into the text the one before it wrote, so no field is lost.
--
-- The result is the text JSON.stringify writes for the merge, byte for byte:
-- the stored text is such a text, and the function only splices texts. A
-- replaced key keeps its place, a new key is appended, and keys that are array
-- indices ("0" to "4294967294") come first in ascending order, as in every
-- JavaScript object.
--
-- jsonb would reorder the keys, and json_each decodes every escape of the text
-- it reads, failing on \u0000 and on lone surrogates such as \ud800 (PostgreSQL
-- text holds neither). So json_each reads the stored text with every escape
-- escaped once more (\\ becomes \\\\, \" becomes \\\", any other \ becomes \\):
-- decoding then gives back each key exactly as stored, quotes aside, and each
-- value's stored text comes back once \\ and \" are decoded. chr(1) and chr(2)
-- stand in for a moment: JSON text never holds a raw control character.
CREATE FUNCTION cats_merge(cat_id bigint, field_keys text[], field_values text[], max_bytes bigint)
RETURNS SETOF json
LANGUAGE plpgsql
AS $$
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
    RETURNING cats.data
  )
  SELECT written.data FROM merged LEFT JOIN written ON true;
END
$$;
