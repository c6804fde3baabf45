-- Many PUTs as one call: cats_merge for each merge in the order given, one
-- row per merge in that order. Merge i has field_counts[i] fields, the next
-- ones of field_keys and field_values. has_cat is null when no cat has the
-- id; otherwise data is what cats_merge answered (null: over max_bytes).
--
-- One statement is one transaction: the merges are committed together, or
-- none is. Callers pass the merges ordered by id, so that two calls lock
-- their cats in the same order and never wait for each other in a cycle.
CREATE FUNCTION cats_merge_many(cat_ids bigint[], field_counts int[], field_keys text[], field_values text[], max_bytes bigint)
RETURNS TABLE (has_cat boolean, data json)
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
    SELECT true, merged.data INTO has_cat, data
      FROM cats_merge(cat_ids[i], field_keys[first:last], field_values[first:last], max_bytes) AS merged(data);
    RETURN NEXT;
    first := last + 1;
  END LOOP;
END
$$;
