import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { MemoryCatsStore } from '../../src/cats/memory-cats-store.js'
import { IDEMPOTENCY_KEY_TTL_MS, NO_LIMITS, type CatsStore, type IdempotentRequest, type StoreLimits } from '../../src/cats/cats-store.js'
import { IdempotencyKeyInUse, IdempotencyKeyReused } from '../../src/errors.js'
import { withObjects, type CatObjects } from '../support/cat-objects.js'
import { pgliteClient, postgresClient, type SqlClient } from '../../src/db/sql-client.js'
import { SqlCatsStore } from '../../src/cats/sql-cats-store.js'
import { migrate } from '../../src/db/migrations.js'
import type { CreateCatBody, StoredCat, UpdateCatBody } from '../../src/cats/schemas.js'
import { adminClient, freshSchemaName, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { schemaSnapshot, type SchemaReset } from '../support/schema-reset.js'
import { conditionalWriteRace } from '../support/conditional-race.js'
import { pgliteCopy } from '../support/pglite-template.js'
import { pgBouncerTarget, startPgBouncer } from '../support/pgbouncer.js'

/**
 * One contract for every CatsStore, run unchanged
 * against the in-memory store, PGlite in process, node-postgres (to a PGlite
 * socket server, always) and a PostgreSQL server when TEST_DATABASE_URL is set.
 */

/** An empty store with these limits (SQL: the suite's migrated schema, reset); whatever it opens is closed on the test's teardown. */
type StoreFactory = (t: Test, limits?: StoreLimits, now?: () => number) => Promise<CatsStore & CatObjects>
/**
 * SQL stores only: a client on a fresh, empty schema that nothing has migrated yet, and the schema's name when
 * statements must name it (no search_path chooses it behind a pooler).
 */
type SchemaFactory = (t: Test) => Promise<{ client: SqlClient, schema?: string }>

// A key's lock is a PostgreSQL advisory lock, which belongs to the whole database, not to a schema: a scope of
// this process's own keeps other test files on the same database from holding the contract's keys meanwhile.
const SCOPE = `contract ${randomUUID()}`
const cat = (name: string, age = 3, breed = 'Siamese'): CreateCatBody => ({ name, age, breed })
const copy = <T>(value: T): T => structuredClone(value)
const namesOf = async (store: CatObjects): Promise<unknown[]> => (await store.list()).map((stored) => stored.name)
const idsOf = async (store: CatObjects): Promise<number[]> => (await store.list()).map((stored) => stored.id)
const limits = (overrides: Partial<StoreLimits>): StoreLimits => ({ ...NO_LIMITS, ...overrides })

/** The contract. `openSchema` adds the migration cases, which only SQL stores have. */
function contractSuite (t: Test, openStore: StoreFactory, openSchema?: SchemaFactory): void {
  t.test('a fresh store is empty; single-record operations on a missing id change nothing', async (t) => {
    const store = await openStore(t)
    t.equal(await store.count(), 0)
    t.strictSame(await store.list(), [])
    t.equal(await store.findCat(1), undefined)
    t.equal(await store.updateCat(1, { name: 'X' }), undefined)
    await store.remove(1)
    t.equal(await store.count(), 0)
    t.strictSame(await store.list(), [])
  })

  t.test('create keeps exactly id, name, age and breed', async (t) => {
    const store = await openStore(t)
    const input = { ...cat('Tom'), id: 99, color: 'black' }
    t.strictSame(copy(await store.create(input)), { id: 1, name: 'Tom', age: 3, breed: 'Siamese' })
    t.strictSame(copy(await store.findCat(1)), { id: 1, name: 'Tom', age: 3, breed: 'Siamese' })
    t.equal(await store.findCat(99), undefined)
  })

  t.test('createJson creates alike and answers the new cat as the JSON text stored', async (t) => {
    const store = await openStore(t)
    await store.create(cat('Tom'))
    const input = { ...cat('Kit'), id: 99, color: 'black' }
    const json = await store.createJson(input)
    t.equal(json, '{"id":2,"name":"Kit","age":3,"breed":"Siamese"}')
    t.equal((await store.find(2))?.json, json, 'the same text a read answers')
    t.equal(await store.count(), 2)
  })

  t.test('id = number of stored cats + 1, so ids repeat after a delete', async (t) => {
    const store = await openStore(t)
    for (const [index, name] of ['A', 'B', 'C'].entries()) {
      t.equal((await store.create(cat(name))).id, index + 1)
    }
    await store.remove(2)
    t.equal(await store.count(), 2)
    t.equal((await store.create(cat('D'))).id, 3, 'two cats stored, so the next id is 3 again')
    t.strictSame(await idsOf(store), [1, 3, 3])
    t.strictSame(await namesOf(store), ['A', 'C', 'D'])
    t.equal(await store.count(), 3)
  })

  t.test('find, update and remove act on the earliest created cat with the id', async (t) => {
    const store = await openStore(t)
    await store.create(cat('A'))
    await store.create(cat('B'))
    await store.create(cat('C'))
    await store.remove(1)
    t.equal((await store.create(cat('D'))).id, 3)
    t.equal((await store.findCat(3))?.name, 'C', 'find: the earliest created')
    t.strictSame(copy(await store.updateCat(3, { color: 'black' })), { id: 3, name: 'C', age: 3, breed: 'Siamese', color: 'black' })
    t.strictSame(copy(await store.list()), [
      { id: 2, name: 'B', age: 3, breed: 'Siamese' },
      { id: 3, name: 'C', age: 3, breed: 'Siamese', color: 'black' },
      { id: 3, name: 'D', age: 3, breed: 'Siamese' }
    ], 'update: only the earliest created changed')
    await store.remove(3)
    t.strictSame(await namesOf(store), ['B', 'D'], 'remove: the earliest created, and only it')
    t.strictSame(copy(await store.findCat(3)), { id: 3, name: 'D', age: 3, breed: 'Siamese' }, 'the next one with the id is found now')
    await store.remove(3)
    t.strictSame(await namesOf(store), ['B'])
    t.equal(await store.findCat(3), undefined)
    t.equal(await store.count(), 1)
  })

  t.test('remove removes exactly one cat, and nothing when no cat has the id', async (t) => {
    const store = await openStore(t)
    for (const name of ['A', 'B', 'C', 'D']) await store.create(cat(name))
    await store.remove(2)
    t.equal((await store.create(cat('E'))).id, 4, 'a second cat with id 4')
    for (const missing of [99, 0, -1, 2]) await store.remove(missing)
    t.strictSame(await namesOf(store), ['A', 'C', 'D', 'E'])
    await store.remove(4)
    t.strictSame(await namesOf(store), ['A', 'C', 'E'], 'one of the two cats with id 4')
    t.equal(await store.count(), 3)
  })

  t.test('list keeps creation order through updates and deletes', async (t) => {
    const store = await openStore(t)
    for (const name of ['A', 'B', 'C', 'D', 'E']) await store.create(cat(name))
    await store.updateCat(1, { name: 'A2' })
    await store.updateCat(5, { extra: true })
    await store.remove(3)
    await store.updateCat(2, { name: 'B2' })
    await store.create(cat('F'))
    await store.remove(1)
    await store.create(cat('G'))
    t.strictSame(copy(await store.list()), [
      { id: 2, name: 'B2', age: 3, breed: 'Siamese' },
      { id: 4, name: 'D', age: 3, breed: 'Siamese' },
      { id: 5, name: 'E', age: 3, breed: 'Siamese', extra: true },
      { id: 5, name: 'F', age: 3, breed: 'Siamese' },
      { id: 5, name: 'G', age: 3, breed: 'Siamese' }
    ])
  })

  t.test('update merges every key but id and returns the whole record', async (t) => {
    const store = await openStore(t)
    await store.create(cat('Tom'))
    await store.create(cat('Kit'))
    const expected = { id: 1, name: 'Tommy', age: 3, breed: 'Siamese', color: 'black', age2: null }
    t.strictSame(copy(await store.updateCat(1, { id: 99, name: 'Tommy', color: 'black', age2: null })), expected)
    t.strictSame(copy(await store.findCat(1)), expected, 'the id in the body is ignored')
    t.equal(await store.findCat(99), undefined)
    const replaced = { ...expected, age: 'four', breed: { kind: 'mixed' }, color: ['black', 'white'] }
    t.strictSame(copy(await store.updateCat(1, { age: 'four', breed: { kind: 'mixed' }, color: ['black', 'white'] })), replaced,
      'declared fields take any value, without type checks')
    t.strictSame(copy(await store.updateCat(1, {})), replaced, 'an empty merge returns the record unchanged')
    t.strictSame(copy(await store.list()), [replaced, { id: 2, name: 'Kit', age: 3, breed: 'Siamese' }])
    t.equal(await store.count(), 2)
  })

  t.test('values round-trip exactly, key order included', async (t) => {
    const store = await openStore(t)
    await store.create(cat('猫 🐈 e\u0301'))
    const fields: UpdateCatBody = {
      nested: { b: 1, a: { z: [1, { y: null, x: false }], y: {} }, list: [] },
      2: 'an integer-like key',
      1: 'goes first, as in any JavaScript object',
      nothing: null,
      yes: true,
      no: false,
      floats: [0.1, -2.5, 3.141592653589793, 1e21, 1.5e-10, 5e-324, 1.7976931348623157e308, Number.MAX_SAFE_INTEGER, 0],
      unicode: 'ünïcödé 猫 🐈‍⬛ \u0000 \ud800 "quoted" \\ back\nslash \t tab \u2028',
      '': 'an empty key',
      'key with "quotes" and \\': 'value',
      'ключ 🔑': 'юникод',
      empty: '',
      deep: JSON.parse(`${'{"d":'.repeat(20)}"bottom"${'}'.repeat(20)}`)
    }
    // What the memory store does: keys keep their first position, new keys are appended.
    const expected: StoredCat = { id: 1, name: '猫 🐈 e\u0301', age: 3, breed: 'Siamese' }
    Object.assign(expected, fields)
    const text = JSON.stringify(expected)
    t.equal(JSON.stringify(await store.updateCat(1, fields)), text, 'update returns it')
    t.equal(JSON.stringify(await store.findCat(1)), text, 'find returns it')
    t.equal(JSON.stringify(await store.list()), `[${text}]`, 'list returns it')
    t.strictSame(copy(await store.findCat(1)), expected)

    const again = { name: 'Tom', nested: [3, 2, 1], added: 'last' }
    Object.assign(expected, again)
    t.equal(JSON.stringify(await store.updateCat(1, again)), JSON.stringify(expected), 'replaced keys keep their place')
    t.equal(JSON.stringify(await store.findCat(1)), JSON.stringify(expected))

    const last = { age: 5, toy: 'ball' }
    Object.assign(expected, last)
    t.equal((await store.update(1, last))?.json, JSON.stringify(expected), 'updateJson answers the same JSON text')
    t.equal((await store.find(1))?.json, JSON.stringify(expected), 'as stored')
    t.equal((await store.update(99, last))?.json, undefined, 'no cat has the id')
  })

  t.test('keys such as __proto__ and constructor are stored as plain data', async (t) => {
    const store = await openStore(t)
    await store.create(cat('Tom'))
    const fields: UpdateCatBody = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": 1}}')
    const text = '{"id":1,"name":"Tom","age":3,"breed":"Siamese","__proto__":{"polluted":true},"constructor":{"prototype":1}}'
    t.equal(JSON.stringify(await store.updateCat(1, fields)), text)
    const found = await store.findCat(1)
    t.equal(JSON.stringify(found), text)
    t.equal(Object.getPrototypeOf(found), Object.prototype)
    t.equal(Reflect.get({}, 'polluted'), undefined, 'Object.prototype is untouched')
  })

  t.test('page walks the list in creation order by position, neither skipping nor repeating a cat', async (t) => {
    const store = await openStore(t)
    t.strictSame(await store.page(0, 10), { items: '', cats: 0, last: 0, more: false }, 'an empty store has one empty page')
    for (const name of ['A', 'B', 'C', 'D', 'E']) await store.create(cat(name))
    const first = await store.page(0, 2)
    t.strictSame(JSON.parse(`[${first.items}]`).map((stored: StoredCat) => stored.name), ['A', 'B'])
    t.equal(first.more, true)
    await store.remove(3)
    await store.updateCat(4, { toy: 'ball' })
    const second = await store.page(first.last, 2)
    t.equal(second.items, '{"id":4,"name":"D","age":3,"breed":"Siamese","toy":"ball"},{"id":5,"name":"E","age":3,"breed":"Siamese"}', 'the removed C is skipped; texts as stored')
    t.equal(second.more, false, 'nothing follows the last cat')
    t.ok(second.last > first.last, 'positions grow')
    await store.create(cat('F'))
    const third = await store.page(second.last, 2)
    t.strictSame(JSON.parse(`[${third.items}]`).map((stored: StoredCat) => stored.name), ['F'], 'a cat created later follows')
    t.strictSame(await store.page(third.last, 2), { items: '', cats: 0, last: third.last, more: false })
    const whole = await store.page(0, 1000)
    t.strictSame(JSON.parse(`[${whole.items}]`), copy(await store.list()), 'one big page is the list')
  })

  t.test('page reports more only when a live cat follows: removed ones at the end do not count', async (t) => {
    const store = await openStore(t)
    for (const name of ['A', 'B', 'C', 'D']) await store.create(cat(name))
    await store.remove(4)
    await store.remove(3)
    const page = await store.page(0, 2)
    t.equal(page.more, false)
    t.strictSame(JSON.parse(`[${page.items}]`).map((stored: StoredCat) => stored.name), ['A', 'B'])
  })

  t.test('page counts its cats and, with through, reads no cat past that position; pageEnd finds where a page ends', async (t) => {
    const store = await openStore(t)
    t.strictSame(await store.pageEnd(0, 3), { last: 0, more: false }, 'an empty store: the page ends where it begins')
    for (const name of ['A', 'B', 'C', 'D', 'E', 'F']) await store.create(cat(name))
    const all = await store.page(0, 10)
    t.equal(all.cats, 6)
    const positions: number[] = []
    for (let after = 0, more = true; more;) {
      const one = await store.page(after, 1)
      t.equal(one.cats, 1)
      positions.push(one.last)
      after = one.last
      more = one.more
    }
    const end = await store.pageEnd(positions[0], 3)
    t.strictSame(end, { last: positions[3], more: true }, 'three cats after the first end at the fourth, and more follow')
    t.strictSame(await store.pageEnd(positions[2], 3), { last: positions[5], more: false }, 'a page that ends the list')
    const bounded = await store.page(positions[0], 10, undefined, end.last)
    t.strictSame(JSON.parse(`[${bounded.items}]`).map((stored: StoredCat) => stored.name), ['B', 'C', 'D'])
    t.equal(bounded.cats, 3)
    t.equal(bounded.more, false, 'nothing follows up to through, whatever follows after it')
    const first = await store.page(positions[0], 2, undefined, end.last)
    t.equal(first.more, true, 'more follow up to through')
    await store.remove(4)
    t.strictSame(await store.page(first.last, 10, undefined, end.last), { items: '', cats: 0, last: first.last, more: false }, 'the one cat up to through is gone')
    t.strictSame(await store.pageEnd(positions[0], 10), { last: positions[5], more: false }, 'a removed cat is not counted')
    await store.remove(5)
    await store.remove(6)
    t.strictSame(await store.pageEnd(positions[2], 1), { last: positions[2], more: false }, 'removed cats at the end: none follows')
  })

  t.test('page with maxBytes stops before the cat that would take its text past that many UTF-8 bytes, but holds one cat', async (t) => {
    const store = await openStore(t)
    for (const name of ['A', 'é'.repeat(20), 'C', 'D']) await store.create(cat(name))
    const texts = (await store.list()).map((stored) => JSON.stringify(stored))
    const bytes = (count: number): number => Buffer.byteLength(texts.slice(0, count).join(','))
    const exact = await store.page(0, 10, bytes(2))
    t.equal(exact.items, texts.slice(0, 2).join(','), 'two cats fit exactly, the comma between them counted')
    t.equal(exact.more, true)
    const short = await store.page(0, 10, bytes(2) - 1)
    t.equal(short.items, texts[0], 'one byte short of the second cat: the page ends before it (é is two bytes)')
    const next = await store.page(short.last, 10, 1)
    t.equal(next.items, texts[1], 'a cat larger than maxBytes is a page of its own')
    t.equal((await store.page(0, 3, 1_000_000)).items, texts.slice(0, 3).join(','), 'limit still counts cats')
    t.strictSame(await store.page(0, 10, 1_000_000), await store.page(0, 10), 'a bound that is never reached changes nothing')
  })

  t.test('page with maxBytes counts a rewritten cat by its new text', async (t) => {
    const store = await openStore(t)
    for (const name of ['A', 'B', 'C']) await store.create(cat(name))
    const small = await store.page(0, 10, 200)
    t.equal(small.cats, 3, 'three small cats fit 200 bytes')
    await store.update(2, { name: 'é'.repeat(100) })
    t.equal((await store.page(0, 10, 200)).cats, 1, 'a name grown past the bound by an update ends the page before it')
    await store.patch(2, { name: 'B' })
    t.equal((await store.page(0, 10, 200)).cats, 3, 'and shrunk by a patch, it fits again')
  })

  t.test('createOnce: the first request creates, a repeat replays the JSON as created and creates nothing', async (t) => {
    const store = await openStore(t)
    const request: IdempotentRequest = { scope: SCOPE, key: 'k-1', fingerprint: 'f', client: 'c' }
    const first = await store.createOnce(cat('Tom'), request)
    t.strictSame(first, { replayed: false, json: '{"id":1,"name":"Tom","age":3,"breed":"Siamese"}' }, 'the new cat as the JSON text stored')
    await store.updateCat(1, { toy: 'ball' })
    const again = await store.createOnce(cat('Tom'), request)
    t.strictSame(again, { replayed: true, json: '{"id":1,"name":"Tom","age":3,"breed":"Siamese"}' }, 'the answer as first sent, not the cat as it is now')
    t.equal(await store.count(), 1)
    await t.rejects(Promise.resolve().then(() => store.createOnce(cat('Other'), { ...request, fingerprint: 'g' })), IdempotencyKeyReused)
    t.equal(await store.count(), 1, 'a reused key creates nothing')
    const otherScope = await store.createOnce(cat('Tom'), { ...request, scope: `${SCOPE} 2` })
    t.equal(otherScope.replayed, false, 'keys of another scope are separate')
    const otherKey = await store.createOnce(cat('Tom'), { ...request, key: 'k-2' })
    t.equal(otherKey.replayed, false)
    t.equal(await store.count(), 3)
  })

  t.test('createOnce: a key expires after its lifetime and then creates again', async (t) => {
    let now = 1_000_000
    const store = await openStore(t, NO_LIMITS, () => now)
    const request: IdempotentRequest = { scope: SCOPE, key: 'k', fingerprint: 'f', client: 'c' }
    await store.createOnce(cat('A'), request)
    now += IDEMPOTENCY_KEY_TTL_MS - 1
    t.equal((await store.createOnce(cat('A'), request)).replayed, true, 'just within the lifetime')
    now += 1
    const late = await store.createOnce(cat('B'), { ...request, fingerprint: 'g' })
    t.equal(late.replayed, false, 'after the lifetime the key is new, whatever the body')
    t.strictSame(await namesOf(store), ['A', 'B'])
    t.equal((await store.createOnce(cat('B'), { ...request, fingerprint: 'g' })).replayed, true, 'and kept again')
  })

  t.test('createOnce: a full collection records no key, so the retry creates once there is room', async (t) => {
    const store = await openStore(t, limits({ maxCats: 1 }))
    await store.create(cat('A'))
    const request: IdempotentRequest = { scope: SCOPE, key: 'k', fingerprint: 'f', client: 'c' }
    await t.rejects(Promise.resolve().then(() => store.createOnce(cat('B'), request)), { code: 'CATS_ERR_COLLECTION_FULL' })
    await store.remove(1)
    t.equal((await store.createOnce(cat('B'), request)).replayed, false)
    t.strictSame(await namesOf(store), ['B'])
  })

  t.test('createOnce: 20 concurrent repeats of one key create one cat; each gets it or finds the first in progress', async (t) => {
    const store = await openStore(t)
    const request: IdempotentRequest = { scope: SCOPE, key: 'same', fingerprint: 'f', client: 'c' }
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, () => Promise.resolve().then(() => store.createOnce(cat('Tom'), request))))
    t.equal(await store.count(), 1)
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') t.type(outcome.reason, IdempotencyKeyInUse)
      else t.equal(outcome.value.json, '{"id":1,"name":"Tom","age":3,"breed":"Siamese"}')
    }
    t.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled' && !outcome.value.replayed).length, 1, 'exactly one created')
  })

  t.test('maxCats: a create past the limit fails with 507 and stores nothing', async (t) => {
    const store = await openStore(t, limits({ maxCats: 2 }))
    await store.create(cat('A'))
    await store.create(cat('B'))
    await t.rejects(async () => await store.create(cat('C')), { code: 'CATS_ERR_COLLECTION_FULL', message: /full \(2 cats\)/ })
    t.equal(await store.count(), 2)
    t.strictSame(await namesOf(store), ['A', 'B'])
    await store.remove(1)
    t.equal((await store.create(cat('C'))).id, 2, 'room again after a delete')
    await t.rejects(async () => await store.create(cat('D')), { code: 'CATS_ERR_COLLECTION_FULL', message: /full/ })
    t.strictSame(await namesOf(store), ['B', 'C'])
  })

  t.test('maxCatBytes: a merge past the limit fails with 413 and leaves the cat unchanged', async (t) => {
    const maxCatBytes = 120
    const store = await openStore(t, limits({ maxCatBytes }))
    const created = copy(await store.create(cat('Tom')))
    const base = Buffer.byteLength(JSON.stringify({ ...created, note: '' }))
    const room = maxCatBytes - base
    // Two-byte characters: the limit counts bytes, not characters.
    const fitting = { note: 'é'.repeat(Math.floor(room / 2)) + 'x'.repeat(room % 2) }
    t.equal(Buffer.byteLength(JSON.stringify({ ...created, ...fitting })), maxCatBytes, 'the test merge is exactly at the limit')
    t.strictSame(copy(await store.updateCat(1, fitting)), { ...created, ...fitting }, 'exactly at the limit is allowed')
    const tooLarge = { note: `${fitting.note}x` }
    await t.rejects(async () => await store.updateCat(1, tooLarge), { code: 'CATS_ERR_CAT_TOO_LARGE', message: /larger than 120 bytes/ })
    await t.rejects(async () => await store.updateCat(1, { other: 'x'.repeat(500) }), { code: 'CATS_ERR_CAT_TOO_LARGE', message: /larger than/ })
    t.strictSame(copy(await store.findCat(1)), { ...created, ...fitting }, 'unchanged')
    t.strictSame(copy(await store.updateCat(1, { note: 'short' })), { ...created, note: 'short' }, 'a merge that shrinks it works')
  })

  t.test('50 concurrent creates get ids exactly 1..50, in creation order', async (t) => {
    const store = await openStore(t)
    const expected = Array.from({ length: 50 }, (_, index) => index + 1)
    const created = await Promise.all(expected.map(async (n) => store.create(cat(`cat${n}`))))
    t.strictSame(created.map((stored) => stored.id).sort((a, b) => a - b), expected)
    t.strictSame(await idsOf(store), expected)
    t.equal(await store.count(), 50)
  })

  t.test('concurrent updates of one cat with different keys all survive', async (t) => {
    const store = await openStore(t)
    await store.create(cat('Tom'))
    await store.create(cat('Kit'))
    const keys = Array.from({ length: 20 }, (_, index) => `key${index}`)
    await Promise.all(keys.map(async (key, index) => store.updateCat(1, { [key]: index })))
    const found = await store.findCat(1)
    t.strictSame(keys.map((key) => found?.[key]), keys.map((_, index) => index))
    t.equal(found?.name, 'Tom')
    t.strictSame(copy(await store.findCat(2)), { id: 2, name: 'Kit', age: 3, breed: 'Siamese' }, 'the other cat is untouched')
  })

  t.test('concurrent creates, updates and removes keep the count and the ids consistent', async (t) => {
    const store = await openStore(t)
    for (let n = 1; n <= 10; n++) await store.create(cat(`cat${n}`))
    await Promise.all([
      ...[1, 2, 3].map(async (id) => store.remove(id)),
      ...[4, 5, 6].map(async (id) => store.updateCat(id, { touched: true }))
    ])
    t.equal(await store.count(), 7)
    t.equal((await store.create(cat('new'))).id, 8)
    t.strictSame(await idsOf(store), [4, 5, 6, 7, 8, 9, 10, 8])
    t.strictSame((await store.list()).filter((stored) => stored.touched === true).map((stored) => stored.id), [4, 5, 6])
  })

  t.test('versions: every write gives the cat a version no cat has had, reads keep it', async (t) => {
    const store = await openStore(t)
    const created = await store.createJson(cat('Tom'))
    const first = await store.find(1)
    t.equal(first?.json, created)
    t.equal((await store.find(1))?.version, first?.version, 'a read keeps the version')
    const updated = await store.update(1, { toy: 'ball' })
    const patched = await store.patch(1, { toy: null })
    t.equal((await store.find(1))?.version, patched?.version, 'a read answers the version of the last write')
    await store.remove(1)
    await store.createJson(cat('Tom'))
    const recreated = await store.find(1)
    t.equal(recreated?.json, first?.json, 'the same id and text again')
    const versions = [first, updated, patched, recreated].map((found) => found?.version)
    t.equal(new Set(versions).size, 4, `four versions, never one twice: ${versions.join(' ')}`)
  })

  t.test('listVersion changes with every create, write and remove, and only then', async (t) => {
    const store = await openStore(t)
    const seen = [await store.listVersion()]
    const unchanged = async (what: string): Promise<void> => { t.equal(await store.listVersion(), seen.at(-1), what) }
    const changed = async (what: string): Promise<void> => {
      const version = await store.listVersion()
      t.notOk(seen.includes(version), `${what}: a list version never seen before`)
      seen.push(version)
    }
    await store.createJson(cat('Tom'))
    await changed('create')
    await store.find(1)
    await store.page(0, 10)
    await store.count()
    await store.remove(2)
    await store.update(2, { age: 1 })
    await store.patch(2, { age: 1 })
    await unchanged('reads, and writes that find no cat')
    await store.update(1, { age: 4 })
    await changed('update')
    await store.patch(1, { age: 5 })
    await changed('patch')
    await store.createOnce(cat('Kit'), { scope: SCOPE, key: 'k', fingerprint: 'f', client: 'c' })
    await changed('create with a key')
    await store.remove(1)
    await changed('remove')
    await store.createOnce(cat('Kit'), { scope: SCOPE, key: 'k', fingerprint: 'f', client: 'c' })
    await t.rejects(async () => await store.update(2, { age: 1 }, { match: ['stale'] }))
    await unchanged('a replayed create with a key, a failed precondition')
  })

  t.test('listVersion stays when a write is refused: too large, or the collection full', async (t) => {
    const store = await openStore(t, limits({ maxCats: 1, maxCatBytes: 200 }))
    await store.createJson(cat('Tom'))
    const before = await store.listVersion()
    await t.rejects(async () => await store.update(1, { toy: 'x'.repeat(200) }))
    await t.rejects(async () => await store.patch(1, { toy: 'x'.repeat(200) }, { match: '*' }))
    await t.rejects(async () => await store.createJson(cat('Kit')))
    t.equal(await store.listVersion(), before)
  })

  t.test('conditional writes: a current version passes; another, or no cat, fails and changes nothing', async (t) => {
    const store = await openStore(t)
    await store.createJson(cat('Tom'))
    const start = await store.find(1)
    const version = start?.version ?? ''
    const failed = { code: 'CATS_ERR_PRECONDITION_FAILED', statusCode: 412 }
    await t.rejects(async () => await store.update(1, { age: 9 }, { match: ['stale'] }), failed, 'update, another version')
    await t.rejects(async () => await store.patch(1, { age: 9 }, { match: [] }), failed, 'patch, no version')
    await t.rejects(async () => await store.remove(1, { match: ['stale'] }), failed, 'remove, another version')
    t.strictSame(await store.find(1), start, 'nothing changed')
    const updated = await store.update(1, { age: 4 }, { match: ['stale', version] })
    t.match(JSON.parse(updated?.json ?? ''), { age: 4 }, 'one of the versions is current: written')
    await t.rejects(async () => await store.update(1, { age: 9 }, { match: [version] }), failed, 'the version before the write is stale')
    const patched = await store.patch(1, { toy: 'ball' }, { match: '*' })
    t.match(JSON.parse(patched?.json ?? ''), { age: 4, toy: 'ball' }, '* passes for any cat')
    await store.remove(1, { match: [patched?.version ?? ''] })
    t.equal(await store.find(1), undefined, 'removed with its current version')
    await t.rejects(async () => await store.update(1, { age: 9 }, { match: '*' }), failed, 'no cat: update fails')
    await t.rejects(async () => await store.patch(1, { age: 9 }, { match: '*' }), failed, 'no cat: patch fails')
    await t.rejects(async () => await store.remove(1, { match: '*' }), failed, 'no cat: remove fails')
    t.equal(await store.count(), 0)
    t.equal(await store.update(1, { age: 9 }, { noneMatch: '*' }), undefined, 'If-None-Match: * holds when no cat has the id')
    await store.createJson(cat('Kit'))
    const kit = (await store.find(1))?.version ?? ''
    await t.rejects(async () => await store.update(1, { age: 9 }, { noneMatch: '*' }), failed, 'If-None-Match: * fails on a cat')
    await t.rejects(async () => await store.patch(1, { age: 9 }, { noneMatch: [kit] }), failed, 'If-None-Match naming its version fails')
    await t.rejects(async () => await store.remove(1, { match: '*', noneMatch: [kit] }), failed, 'both must hold')
    t.match(JSON.parse((await store.update(1, { age: 9 }, { noneMatch: ['other'] }))?.json ?? ''), { age: 9 }, 'another version: written')
  })

  t.test('conditional writes obey the size limit: 413, nothing changed', async (t) => {
    const store = await openStore(t, limits({ maxCatBytes: 200 }))
    await store.createJson(cat('Tom'))
    const start = await store.find(1)
    const tooLarge = { code: 'CATS_ERR_CAT_TOO_LARGE', statusCode: 413 }
    await t.rejects(async () => await store.update(1, { toy: 'x'.repeat(200) }, { match: '*' }), tooLarge, 'update')
    await t.rejects(async () => await store.patch(1, { toy: 'x'.repeat(200) }, { match: '*' }), tooLarge, 'patch')
    await t.rejects(async () => await store.patch(1, { toy: 'x'.repeat(200) }), tooLarge, 'patch without a condition')
    t.strictSame(await store.find(1), start)
  })

  t.test('patch applies a merge patch and writes the text JSON.stringify would', async (t) => {
    const store = await openStore(t)
    await store.createJson(cat('Tom'))
    const first = await store.patch(1, { id: 7, age: 4, toy: { kind: 'ball', color: 'red' }, 2: 'two' })
    t.equal(first?.json, JSON.stringify({ 2: 'two', id: 1, name: 'Tom', age: 4, breed: 'Siamese', toy: { kind: 'ball', color: 'red' } }))
    const second = await store.patch(1, { toy: { color: null }, age: null, 2: null })
    t.equal(second?.json, '{"id":1,"name":"Tom","breed":"Siamese","toy":{"kind":"ball"}}', 'null removes, at any depth')
    t.equal((await store.find(1))?.json, second?.json, 'as stored')
    t.equal(await store.patch(2, { age: 1 }), undefined, 'no cat with the id')
  })

  // A few trials here for every store; test/stress/cats-store.contract.stress.ts runs hundreds on the SQL stores.
  t.test('of 8 concurrent conditional writes with one version, exactly one wins (5 trials)', async (t) => {
    const store = await openStore(t)
    await store.createJson(cat('Tom'))
    t.equal(await conditionalWriteRace(store, 5), 0, 'one winner, seven 412s, and the stored cat is the winner\'s')
  })

  if (openSchema === undefined) return

  t.test('migrate is idempotent: twice in a row, and twice at once on an empty schema', async (t) => {
    const { client, schema } = await openSchema(t)
    const migrated = async (): Promise<unknown> => await migrate(client, 'max', schema)
    await Promise.all([migrated(), migrated()])
    await migrated()
    const store = withObjects(new SqlCatsStore(client, NO_LIMITS, { schema }))
    await store.create(cat('A'))
    await store.create(cat('B'))
    await store.remove(1)
    await migrated()
    await Promise.all([migrated(), migrated()])
    t.equal(await store.count(), 1, 'the count row is kept')
    t.strictSame(await namesOf(store), ['B'], 'the data is kept')
    t.equal((await store.create(cat('C'))).id, 2)
  })
}

/** How a SQL suite reaches its database: schemas made for a test or for the suite, and clients on one of them. */
interface SqlTarget {
  /** A new, empty schema, dropped on `t`'s teardown. */
  createSchema: (t: Test) => Promise<string>
  /** A client whose statements run in `schema`; whatever it opens is closed on `t`'s teardown. */
  openOn: (t: Test, schema: string) => Promise<SqlClient>
  /** Whether the store and the migrations name the schema, as the service does, instead of relying on the search_path. */
  named?: boolean
}

/**
 * The store factory of a SQL suite: one schema for the suite, migrated on first use, and for each test emptied
 * back to what the migrations left (migrating a new schema for every test would cost many times that).
 */
function sqlStores (suite: Test, target: SqlTarget): StoreFactory {
  let migrated: Promise<{ schema: string, reset: SchemaReset | undefined }> | undefined
  return async (t, storeLimits = NO_LIMITS, now = Date.now) => {
    migrated ??= target.createSchema(suite).then((schema) => ({ schema, reset: undefined }))
    const state = await migrated
    const client = await target.openOn(t, state.schema)
    const schema = target.named === true ? state.schema : undefined
    if (state.reset === undefined) {
      await migrate(client, 'max', schema)
      state.reset = await schemaSnapshot(client, schema)
    } else {
      await state.reset(client)
    }
    return withObjects(new SqlCatsStore(client, storeLimits, { now, schema }))
  }
}

/** The contract over a SQL target; the migration cases get schemas of their own. */
function sqlContract (t: Test, target: SqlTarget): void {
  contractSuite(t, sqlStores(t, target), async (t) => {
    const schema = await target.createSchema(t)
    return { client: await target.openOn(t, schema), schema: target.named === true ? schema : undefined }
  })
}

// Both open copies of an initialised empty database (creating one from nothing takes seconds more), and open
// now, while the memory suite runs.
const inProcess = pgliteCopy(t).then(async (dir) => await pgliteClient(dir))
const served = pgliteCopy(t).then(async (dir) => await PGlite.create(dir))
t.teardown(async () => {
  await (await inProcess).close()
  await (await served).close()
})

t.test('in-memory MemoryCatsStore', async (t) => {
  contractSuite(t, async (t, storeLimits, now) => {
    return withObjects(new MemoryCatsStore(storeLimits, now))
  })
})

/** Schemas on a PGlite's one session: its search_path chooses the schema of every statement. */
function pgliteSchemas (exec: (sql: string) => Promise<unknown>): SqlTarget['createSchema'] {
  return async (t) => {
    const schema = freshSchemaName('cats_test')
    await exec(`CREATE SCHEMA ${schema}`)
    t.teardown(async () => { await exec(`SET search_path TO public; DROP SCHEMA ${schema} CASCADE`) })
    return schema
  }
}

t.test('SqlCatsStore over PGlite in process (pglite://<directory>)', async (t) => {
  // One PGlite for the suite, its schemas chosen by the search_path of its one session.
  const shared = await inProcess
  sqlContract(t, {
    createSchema: pgliteSchemas(async (sql) => { await shared.transaction(async (tx) => { await tx.execScript(sql) }) }),
    openOn: async (_t, schema) => {
      await shared.query(`SET search_path TO ${schema}`)
      return shared
    }
  })
})

t.test('SqlCatsStore over node-postgres, to a PGlite socket server', async (t) => {
  const db = await served
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 100 })
  await server.start()
  t.teardown(() => server.stop())
  const url = `postgres://postgres@${server.getServerConn()}/postgres`
  // The socket server gives every connection the same PGlite session, so its search_path is set there
  // (and two connections' named statements would collide there).
  sqlContract(t, {
    createSchema: pgliteSchemas(async (sql) => await db.exec(sql)),
    openOn: async (t, schema) => {
      await db.exec(`SET search_path TO ${schema}`)
      const client = await postgresClient(url, { preparedStatements: false })
      t.teardown(() => client.close())
      return client
    }
  })
})

const serverUrl = process.env.TEST_DATABASE_URL
if (serverUrl === undefined || serverUrl === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server run of the contract suite was skipped')
} else {
  t.test('SqlCatsStore over node-postgres, to the PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    const admin = await adminClient(t, serverUrl)
    // Schemas of its own, dropped afterwards: parallel files and re-runs never meet.
    sqlContract(t, {
      createSchema: async (t) => await freshServerSchema(t, admin, 'cats_test'),
      openOn: async (t, schema) => {
        const client = await postgresClient(urlWithSchema(serverUrl, schema))
        t.teardown(() => client.close())
        return client
      }
    })
  })
}

// Through Debian's PgBouncer in transaction mode, prepared statements off, every statement naming the schema as
// the service's do (DATABASE_SCHEMA): a pooler passes no search_path.
const bouncerServer = pgBouncerTarget(t, 'the contract suite')
if (bouncerServer !== undefined) {
  t.test('SqlCatsStore over node-postgres, through PgBouncer in transaction mode to TEST_DATABASE_URL', async (t) => {
    const admin = await adminClient(t, bouncerServer)
    const bouncer = await startPgBouncer(t, bouncerServer, 'transaction')
    sqlContract(t, {
      createSchema: async (t) => await freshServerSchema(t, admin, 'cats_test'),
      openOn: async (t) => {
        const client = await postgresClient(bouncer.url, { pooled: true, preparedStatements: false })
        t.teardown(() => client.close())
        return client
      },
      named: true
    })
  })
}
