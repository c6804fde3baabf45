-- The functions of migrations 4 to 10 name the tables, sequence and functions
-- they use without a schema, so they found them through the caller's
-- search_path. Each now runs with the path it was created with: the package's
-- schema alone (the migrations run with it, see src/db/migrations.ts), then
-- pg_temp, so no temporary table stands in for one of its tables. A connection
-- whose search_path leaves that schema out (DATABASE_SCHEMA, a pooler that
-- refuses the setting) still gets the package's objects. The triggers call
-- these functions, so they follow.
ALTER FUNCTION cats_merge(bigint, text[], text[], bigint) SET search_path FROM CURRENT;
ALTER FUNCTION cats_merge_many(bigint[], int[], text[], text[], bigint) SET search_path FROM CURRENT;
ALTER FUNCTION cats_create_many(text[], bigint) SET search_path FROM CURRENT;
ALTER FUNCTION idempotency_keys_added() SET search_path FROM CURRENT;
ALTER FUNCTION idempotency_keys_removed() SET search_path FROM CURRENT;
ALTER FUNCTION idempotency_key_record(text, text, text, text, text, integer, bigint, bigint, bigint, bigint, bigint, bigint)
  SET search_path FROM CURRENT;
ALTER FUNCTION cats_new_version() SET search_path FROM CURRENT;
ALTER FUNCTION cats_count_change() SET search_path FROM CURRENT;
ALTER FUNCTION cats_merge_versioned(bigint, text[], text[], bigint) SET search_path FROM CURRENT;
ALTER FUNCTION cats_merge_many_versioned(bigint[], int[], text[], text[], bigint) SET search_path FROM CURRENT;
