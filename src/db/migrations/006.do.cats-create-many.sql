-- Many POSTs as one call. bodies are the new cats' JSON texts without their id
-- ({"name":…,"age":…,"breed":…}), in the order the requests arrived; each gets
-- the next id (count + 1, count + 2, …) and its place in creation order, as
-- long as the collection stays within max_cats. Returns one row per cat
-- created: its body's place in bodies (from 1) and its data. A body without a
-- row was refused: the collection was full.
--
-- One statement is one transaction: the count's row lock is taken once and
-- the cats are committed together, with one flush, instead of one lock turn
-- and one flush per create.
CREATE FUNCTION cats_create_many(bodies text[], max_cats bigint)
RETURNS TABLE (place bigint, cat_data json)
LANGUAGE plpgsql
AS $$
DECLARE
  stored bigint;
  accepted bigint;
BEGIN
  SELECT cats_count.count INTO stored FROM cats_count FOR UPDATE;
  accepted := least(coalesce(array_length(bodies, 1), 0), greatest(max_cats - stored, 0));
  UPDATE cats_count SET count = stored + accepted;
  RETURN QUERY
    WITH inserted AS (
      INSERT INTO cats (id, data)
      SELECT stored + body.place, ('{"id":' || (stored + body.place) || ',' || substr(body.text, 2))::json
      FROM unnest(bodies[1:accepted]) WITH ORDINALITY AS body(text, place)
      ORDER BY body.place
      RETURNING cats.id, cats.data
    )
    SELECT inserted.id - stored, inserted.data FROM inserted;
END
$$;
