import assert from 'node:assert/strict'
import fc from 'fast-check'
import { withObjects } from './cat-objects.js'
import { MemoryCatsStore } from '../../src/cats/memory-cats-store.js'
import { NO_LIMITS, type CatsStore, type StoreLimits } from '../../src/cats/cats-store.js'
import { SqlCatsStore } from '../../src/cats/sql-cats-store.js'
import type { SqlClient } from '../../src/db/sql-client.js'
import type { UpdateCatBody } from '../../src/cats/schemas.js'
import { CatTooLarge } from '../../src/errors.js'

/**
 * The SQL store's merges against the memory store's on generated cats (test/cats/sql-round-trips.test.ts, and
 * more cases in test:stress). Reproduce a failure with FC_SEED=<seed>.
 */

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const withLimit = (maxCatBytes: number): StoreLimits => ({ ...NO_LIMITS, maxCatBytes })

/** Texts that stress the splicing: quotes, backslashes, escapes, \u0000, lone surrogates, other scripts. */
const tricky = fc.constantFrom('\u0000', '\ud800', '\udfff', '"', '\\', '\\"', '\\u0000', '/', '\u2028', '\n', '\u001f', '猫', '🐈', 'é')
const text = fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 3 }), tricky), { maxLength: 4 }).map((parts) => parts.join(''))
const key = fc.oneof(
  fc.constantFrom('id', 'name', 'age', 'breed', '0', '7', '10', '4294967294', '4294967295', '01', '-1', '1.5', '', '__proto__', 'constructor'),
  fc.nat({ max: 20 }).map(String),
  text
)
const value = fc.jsonValue({ maxDepth: 3, stringUnit: fc.oneof(fc.string({ unit: 'binary', maxLength: 1 }), tricky) })
// Object.fromEntries keeps __proto__ as an own key, as JSON.parse of a request body does.
const fields: fc.Arbitrary<UpdateCatBody> = fc.array(fc.tuple(key, value), { maxLength: 6 }).map((entries) => Object.fromEntries(entries))
const limit = fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.integer({ min: 40, max: 600 }))

const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)

/** What a store answers to a merge, as text: the cat's JSON, nothing, or the size limit. */
export async function outcome (store: CatsStore, id: number, update: UpdateCatBody): Promise<string> {
  try {
    return (await store.update(id, update))?.json ?? 'no cat'
  } catch (error) {
    if (error instanceof CatTooLarge) return `too large: ${error.message}`
    throw error
  }
}

/**
 * Asserts over `numRuns` generated cats, up to 5 merges each, that every merge through a SqlCatsStore on `client`
 * (a migrated schema without cats) gives the memory store's JSON text, byte for byte, and its refusals.
 */
export async function mergesMatchMemory (client: SqlClient, numRuns: number): Promise<void> {
  await fc.assert(fc.asyncProperty(limit, fc.array(fields, { minLength: 1, maxLength: 5 }), async (maxCatBytes, merges) => {
    const memory = withObjects(new MemoryCatsStore(withLimit(maxCatBytes)))
    const sql = withObjects(new SqlCatsStore(client, withLimit(maxCatBytes)))
    try {
      for (const store of [memory, sql]) await store.create(tom)
      for (const merge of merges) {
        assert.equal(await outcome(sql, 1, merge), await outcome(memory, 1, merge))
        assert.equal((await sql.find(1))?.json, (await memory.find(1))?.json)
      }
      assert.equal(await outcome(sql, 2, merges[0]), 'no cat')
    } finally {
      await sql.remove(1)
    }
  }), { numRuns, seed })
}
