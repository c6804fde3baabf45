import { schemaPrefix } from './own-schema.js'

/**
 * The readiness probe of the database: one statement that names, in the package's schema, every table and column
 * and each function the stores use, reading no row. A database that answers `SELECT 1` while its tables are
 * missing or someone else's (every request would fail) is then not ready. Columns are resolved when the statement
 * is planned, so the probe costs a plan, not a scan.
 */
export function storeProbe (schema: string): string {
  const s = schemaPrefix(schema)
  const reads = [
    `SELECT seq, id, data, version FROM ${s}cats`,
    `SELECT count, changes, epoch FROM ${s}cats_count`,
    `SELECT scope, key, client, fingerprint, response, bytes, seq, created_at_ms FROM ${s}idempotency_keys`,
    `SELECT id, user_id, username, generation, rotated_at_ms, created_at_ms, last_used_at_ms, address, user_agent, expires_at_ms,
      window_start_ms, window_count, ended, legacy_token_hash FROM ${s}sessions`,
    `SELECT id, expires_at FROM ${s}revoked_tokens`
  ]
  const functions = [
    'cats_create_many(text[], bigint)',
    'cats_merge_versioned(bigint, text[], text[], bigint)',
    'cats_merge_many_versioned(bigint[], int[], text[], text[], bigint)',
    'idempotency_key_record(text, text, text, text, text, integer, bigint, bigint, bigint, bigint, bigint, bigint)'
  ]
  // A cast to regprocedure fails when the function is missing (to_regprocedure would answer null).
  return [
    'SELECT 1 WHERE',
    ...reads.map((read) => `NOT EXISTS (${read} LIMIT 0) AND`),
    functions.map((signature) => `'${s.replaceAll("'", "''")}${signature}'::regprocedure IS NOT NULL`).join(' AND ')
  ].join('\n')
}
