import type { UpdateCatBody } from './schemas.js'
import { mergedEntries } from './merge-rules.js'

/*
 * PUT as one statement: lock the earliest created cat with the id, merge the
 * fields into its JSON text, and write it back when it fits the size limit.
 *
 * The result is the text JSON.stringify would write for the merge of
 * merge-rules.ts, byte for byte: the stored text is such a text, the fields
 * arrive as JSON.stringify texts of their keys and values, and the statement
 * only splices texts. A replaced key keeps its place, a new key is appended,
 * and keys that are array indices ("0" to "4294967294") come first in
 * ascending order, as in every JavaScript object.
 *
 * jsonb would reorder the keys, and json_each decodes every escape of the
 * text it reads, failing on \u0000 and on lone surrogates such as \ud800
 * (PostgreSQL text holds neither). So json_each reads the stored text with
 * every escape escaped once more: decoding then gives back each key exactly as
 * written in the stored text, quotes aside, and each value's text is the
 * stored one once the extra escaping is undone. chr(1) and chr(2) stand in
 * for a moment: JSON text never holds a raw control character.
 */

/** The stored text with `\\` written `\\\\`, `\"` written `\\\"` and any other `\` written `\\` (SQL standard strings). */
const DOUBLY_ESCAPED = String.raw`replace(replace(replace(replace(replace(target.data::text,
  '\\', chr(1)), '\"', chr(2)), '\', '\\'), chr(1), '\\\\'), chr(2), '\\\"')`

/** A value's text from DOUBLY_ESCAPED back as stored: `\\` becomes `\`, `\"` becomes `"`. */
const SINGLY_ESCAPED = String.raw`replace(replace(replace(field.value::text, '\\', chr(1)), '\"', '"'), chr(1), '\')`

/** A key's number when it is an array index, else null: indices sort first, in ascending order. */
const ARRAY_INDEX = `CASE WHEN fields.key !~ '^"(0|[1-9][0-9]{0,9})"$' THEN NULL
  WHEN btrim(fields.key, '"')::bigint <= 4294967294 THEN btrim(fields.key, '"')::bigint END`

/**
 * $1 the id, $2 and $3 the fields' keys and values as JSON texts (MergeParameters), $4 the size limit in bytes.
 * No row: no cat has the id. A row whose data is null: the merged cat would be over the limit, and nothing was written.
 * Otherwise data is the cat as merged and stored. FOR UPDATE makes concurrent merges into one cat wait for each other,
 * and each then merges into the text the one before it wrote, so no field is lost.
 */
export const MERGE = `
WITH target AS MATERIALIZED (SELECT seq, data FROM cats WHERE id = $1 ORDER BY seq LIMIT 1 FOR UPDATE),
stored AS (
  SELECT '"' || field.key || '"' AS key, ${SINGLY_ESCAPED} AS value, field.place
  FROM target, json_each((${DOUBLY_ESCAPED})::json) WITH ORDINALITY AS field(key, value, place)
),
sent AS (SELECT key, value, place FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS field(key, value, place)),
fields AS (
  SELECT coalesce(stored.key, sent.key) AS key, coalesce(sent.value, stored.value) AS value,
    coalesce(stored.place, (SELECT count(*) FROM stored) + sent.place) AS place
  FROM stored FULL JOIN sent ON sent.key = stored.key
),
merged AS (
  SELECT target.seq, '{' || string_agg(fields.key || ':' || fields.value, ',' ORDER BY ${ARRAY_INDEX}, fields.place) || '}' AS json
  FROM target, fields GROUP BY target.seq
),
written AS (
  UPDATE cats SET data = merged.json::json FROM merged
  WHERE cats.seq = merged.seq AND octet_length(merged.json) <= $4::bigint
  RETURNING cats.data
)
SELECT written.data FROM merged LEFT JOIN written ON true`

export type MergeParameters = [id: number, keys: string[], values: string[], maxCatBytes: number]

/** The parameters of MERGE: the fields the merge rules write, in their order. */
export function mergeParameters (id: number, fields: UpdateCatBody, maxCatBytes: number): MergeParameters {
  const keys: string[] = []
  const values: string[] = []
  for (const [key, value] of mergedEntries(fields)) {
    keys.push(JSON.stringify(key))
    values.push(JSON.stringify(value))
  }
  return [id, keys, values, Math.min(maxCatBytes, Number.MAX_SAFE_INTEGER)]
}
