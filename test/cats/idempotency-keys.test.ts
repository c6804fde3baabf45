import t, { type Test } from 'tap'
import { MemoryCatsStore } from '../../src/cats/memory-cats-store.js'
import {
  IDEMPOTENCY_KEY_TTL_MS, NO_LIMITS, idempotencyKeyBytes, type CatsStore, type IdempotencyKeyLimits, type IdempotentRequest
} from '../../src/cats/cats-store.js'
import { pgliteClient, postgresClient, type SqlClient } from '../../src/db/sql-client.js'
import { SqlCatsStore } from '../../src/cats/sql-cats-store.js'
import { migrate } from '../../src/db/migrations.js'
import type { CreateCatBody } from '../../src/cats/schemas.js'
import { adminClient, freshSchemaName, freshSchemaOn, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { schemaSnapshot, type SchemaReset } from '../support/schema-reset.js'
import { pgliteCopy } from '../support/pglite-template.js'

/**
 * The bounds on idempotency keys, the same on every store: a quota per client and a cap on all keys, both in
 * keys and in bytes; at its quota a client's own oldest keys go, at the cap the oldest of all.
 */

/** What a store keeps, counted from outside: every key, and each client's. */
interface Usage {
  keys: number
  bytes: number
}

interface Opened {
  store: CatsStore
  usage: (client?: string) => Promise<Usage>
}

type Opener = (t: Test, limits: Partial<IdempotencyKeyLimits>, now?: () => number) => Promise<Opened>

const cat = (name: string): CreateCatBody => ({ name, age: 3, breed: 'Siamese' })
const request = (client: string, key: string, scope = ''): IdempotentRequest => ({ scope, key, fingerprint: `f-${key}`, client })
const limitsWith = (limits: Partial<IdempotencyKeyLimits>) => ({ ...NO_LIMITS, idempotencyKeys: { ...NO_LIMITS.idempotencyKeys, ...limits } })

/** Creates with a key; whether it was replayed. */
async function once (store: CatsStore, client: string, key: string, name = key, scope = ''): Promise<boolean> {
  return (await store.createOnce(cat(name), request(client, key, scope))).replayed
}

/** What one key of `cat(key)` counts for, as the store answers it (the cat's id has as many digits as `id`). */
const bytesOf = (client: string, key: string, id: number, scope = ''): number =>
  idempotencyKeyBytes(request(client, key, scope), JSON.stringify({ id, ...cat(key) }))

function limitsSuite (t: Test, open: Opener): void {
  t.test('many keyed creates per client keep at most the quota of each, and their bytes are counted', async (t) => {
    const { store, usage } = await open(t, { clientMaxKeys: 5 })
    for (let n = 0; n < 20; n++) {
      for (const client of ['a', 'b', 'c']) await once(store, client, `${client}-${n}`)
    }
    t.equal(await store.count(), 60, 'every create created its cat')
    for (const client of ['a', 'b', 'c']) {
      const expected = [15, 16, 17, 18, 19].reduce((sum, n) => sum + bytesOf(client, `${client}-${n}`, 1 + n * 3 + ['a', 'b', 'c'].indexOf(client)), 0)
      t.strictSame(await usage(client), { keys: 5, bytes: expected }, `client ${client}: its 5 newest keys`)
    }
    t.strictSame((await usage()).keys, 15, '15 keys in all, not 60')
    t.equal((await usage()).bytes, (await usage('a')).bytes + (await usage('b')).bytes + (await usage('c')).bytes)
  })

  t.test('a client at its quota lets its own oldest keys go, and another client\'s key still replays', async (t) => {
    const { store, usage } = await open(t, { clientMaxKeys: 3 })
    t.equal(await once(store, 'victim', 'v-1'), false)
    for (let n = 1; n <= 50; n++) await once(store, 'noisy', `n-${n}`)
    t.equal(await once(store, 'victim', 'v-1'), true, 'the other client\'s key is kept')
    t.equal(await once(store, 'noisy', 'n-50'), true, 'the newest keys of the noisy client are kept')
    t.equal(await once(store, 'noisy', 'n-48'), true)
    t.equal(await once(store, 'noisy', 'n-47'), false, 'its older ones went: a repeat creates again')
    t.strictSame((await usage('victim')).keys, 1)
    t.strictSame((await usage('noisy')).keys, 3)
    t.equal(await store.count(), 52)
  })

  t.test('a client\'s quota in bytes: its oldest go until the new key fits; a key larger than the quota is not kept', async (t) => {
    const one = bytesOf('a', 'k-1', 1)
    const { store, usage } = await open(t, { clientMaxBytes: one * 2 + 10 })
    await once(store, 'a', 'k-1')
    await once(store, 'a', 'k-2')
    t.strictSame(await usage('a'), { keys: 2, bytes: one * 2 })
    await once(store, 'a', 'k-3')
    t.strictSame(await usage('a'), { keys: 2, bytes: one * 2 }, 'the oldest made room')
    t.equal(await once(store, 'a', 'k-1', 'k-1'), false, 'k-1 went')
    const huge = 'x'.repeat(one * 3)
    t.equal((await store.createOnce(cat(huge), request('a', 'huge'))).replayed, false)
    t.equal((await store.createOnce(cat(huge), request('a', 'huge'))).replayed, false, 'not kept, so a repeat creates again')
    t.equal((await usage('a')).keys, 2, 'and the client\'s keys were left alone')
  })

  t.test('the cap on all keys holds: the oldest of any client go', async (t) => {
    const { store, usage } = await open(t, { maxKeys: 10, clientMaxKeys: 4 })
    for (const client of ['a', 'b', 'c', 'd', 'e']) {
      for (let n = 1; n <= 4; n++) await once(store, client, `${client}-${n}`)
    }
    t.strictSame((await usage()).keys, 10)
    t.strictSame([await usage('a'), await usage('b'), await usage('c')].map((kept) => kept.keys), [0, 0, 2], 'the oldest clients\' keys went first')
    t.equal((await usage('e')).keys, 4)
    t.equal(await once(store, 'e', 'e-1'), true)
    t.equal(await once(store, 'c', 'c-3'), true)
    t.equal(await once(store, 'c', 'c-2'), false)
  })

  t.test('the cap in bytes holds', async (t) => {
    const one = bytesOf('c1', 'k-1', 1)
    const { store, usage } = await open(t, { maxBytes: one * 5 + 10 })
    for (let n = 1; n <= 9; n++) await once(store, `c${n}`, `k-${n}`)
    t.strictSame(await usage(), { keys: 5, bytes: one * 5 })
    t.equal(await once(store, 'c5', 'k-5'), true, 'the newest are kept')
    t.equal(await once(store, 'c4', 'k-4'), false, 'the oldest went')
    const huge = 'x'.repeat(one * 6)
    t.equal((await store.createOnce(cat(huge), request('z', 'huge'))).replayed, false)
    t.equal((await usage()).keys, 5, 'a key larger than the cap is not kept, and pushes nothing out')
  })

  t.test('the same key of two scopes counts once for each scope\'s client; expired keys leave the counts', async (t) => {
    let now = 1_000_000
    const { store, usage } = await open(t, { clientMaxKeys: 10 }, () => now)
    await once(store, 'user 1', 'k', 'k', 'user 1')
    await once(store, 'user 2', 'k', 'k', 'user 2')
    t.strictSame([(await usage('user 1')).keys, (await usage('user 2')).keys], [1, 1])
    now += IDEMPOTENCY_KEY_TTL_MS
    await once(store, 'user 3', 'other', 'other', 'user 3')
    t.strictSame(await usage(), { keys: 1, bytes: bytesOf('user 3', 'other', 3, 'user 3') }, 'only the key recorded after the others expired')
    t.strictSame(await usage('user 1'), { keys: 0, bytes: 0 })
  })
}

t.test('MemoryCatsStore', async (t) => {
  limitsSuite(t, async (t, limits, now) => {
    const store = new MemoryCatsStore(limitsWith(limits), now)
    return { store, usage: async (client) => store.keptKeys(client) }
  })

  t.test('a store without limits keeps every key', async (t) => {
    const store = new MemoryCatsStore()
    for (let n = 0; n < 3000; n++) await store.createOnce(cat(`c${n}`), request(`client ${n % 3}`, `k-${n}`))
    t.equal(store.keptKeys().keys, 3000)
    t.equal(store.keptKeys('client 0').keys, 1000)
  })
})

/** Usage read from the tables, checked against the row the triggers keep. */
async function sqlUsage (t: Test, client: SqlClient, of?: string): Promise<Usage> {
  const [counted] = of === undefined
    ? await client.query<{ keys: string, bytes: string }>('SELECT count(*) AS keys, coalesce(sum(bytes), 0) AS bytes FROM idempotency_keys')
    : await client.query<{ keys: string, bytes: string }>('SELECT count(*) AS keys, coalesce(sum(bytes), 0) AS bytes FROM idempotency_keys WHERE client = $1', [of])
  const usage = { keys: Number(counted.keys), bytes: Number(counted.bytes) }
  if (of === undefined) {
    const [kept] = await client.query<{ keys: string, bytes: string }>('SELECT keys, bytes FROM idempotency_keys_usage')
    t.strictSame({ keys: Number(kept.keys), bytes: Number(kept.bytes) }, usage, 'the usage row agrees with the table')
  }
  return usage
}

/**
 * `openSchema` gives a client on a new, empty schema; `openMigrated` one on the suite's schema, which the first
 * test migrates and each later one empties back to what the migrations left (cheaper than migrating anew).
 */
function sqlSuite (t: Test, openSchema: (t: Test) => Promise<SqlClient>, openMigrated: (t: Test) => Promise<SqlClient>): void {
  let reset: SchemaReset | undefined
  const open: Opener = async (t, limits, now = Date.now) => {
    const client = await openMigrated(t)
    if (reset === undefined) {
      await migrate(client)
      reset = await schemaSnapshot(client)
    } else {
      await reset(client)
    }
    const store = new SqlCatsStore(client, limitsWith(limits), { now })
    return { store, usage: async (of) => await sqlUsage(t, client, of) }
  }
  limitsSuite(t, open)

  t.test('keys recorded before the upgrade keep replaying, counted against their scope', async (t) => {
    const client = await openSchema(t)
    await migrate(client, '007')
    const oldStore = new SqlCatsStore(client)
    const now = Date.now()
    const recordedBefore = async (scope: string, key: string): Promise<void> => {
      const json = await oldStore.createJson(cat(key))
      await client.query('INSERT INTO idempotency_keys (scope, key, fingerprint, response, created_at_ms) VALUES ($1, $2, $3, $4, $5)',
        [scope, key, `f-${key}`, json, now])
    }
    await recordedBefore('', 'shared')
    await recordedBefore('user 1', 'mine')
    t.strictSame(await migrate(client), [{ version: 8, name: 'idempotency-key-limits' }, { version: 9, name: 'session-rotations' }, { version: 10, name: 'cats-versions' }, { version: 11, name: 'function-paths' }])
    t.strictSame(await sqlUsage(t, client), { keys: 2, bytes: bytesOf('', 'shared', 1) + bytesOf('user 1', 'mine', 2, 'user 1') })
    t.strictSame(await sqlUsage(t, client, 'user 1'), { keys: 1, bytes: bytesOf('user 1', 'mine', 2, 'user 1') }, 'counted against its scope')
    const store = new SqlCatsStore(client, limitsWith({ clientMaxKeys: 1 }))
    t.strictSame(await store.createOnce(cat('shared'), request('203.0.113.1', 'shared')), { replayed: true, json: '{"id":1,"name":"shared","age":3,"breed":"Siamese"}' })
    t.equal(await once(store, 'user 1', 'mine', 'mine', 'user 1'), true)
    t.equal(await once(store, 'user 1', 'newer', 'newer', 'user 1'), false)
    t.equal(await once(store, 'user 1', 'mine', 'mine', 'user 1'), false, 'the old key made way at the quota, as any key does')
    await sqlUsage(t, client)
  })

  t.test('concurrent keyed creates of one client end within its quota, and the usage row stays true', async (t) => {
    const { store, usage } = await open(t, { clientMaxKeys: 5, maxKeys: 12 })
    const creates = Array.from({ length: 40 }, async (_, n) => await once(store, `client-${n % 2}`, `k-${n}`))
    t.strictSame(await Promise.all(creates), Array(40).fill(false))
    t.equal(await store.count(), 40)
    t.strictSame([(await usage('client-0')).keys, (await usage('client-1')).keys], [5, 5])
    t.equal((await usage()).keys, 10)
  })
}

// A copy of an initialised empty database: creating one from nothing takes seconds more.
const inProcess = pgliteCopy(t).then(async (dir) => await pgliteClient(dir))
t.teardown(async () => { await (await inProcess).close() })

t.test('SqlCatsStore over PGlite', async (t) => {
  const shared = await inProcess
  // The schemas of the PGlite's one session are chosen by its search_path; the suite's is made on first use.
  let suiteSchema: string | undefined
  sqlSuite(t, async (t) => await freshSchemaOn(t, shared, 'idempotency_test'), async () => {
    if (suiteSchema === undefined) {
      suiteSchema = freshSchemaName('idempotency_test')
      await shared.query(`CREATE SCHEMA ${suiteSchema}`)
      const schema = suiteSchema
      t.teardown(async () => {
        await shared.query('SET search_path TO public')
        await shared.query(`DROP SCHEMA ${schema} CASCADE`)
      })
    }
    await shared.query(`SET search_path TO ${suiteSchema}`)
    return shared
  })
})

const serverUrl = process.env.TEST_DATABASE_URL
if (serverUrl === undefined || serverUrl === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server run was skipped')
} else {
  t.test('SqlCatsStore over the PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    const admin = await adminClient(t, serverUrl)
    const clientOn = async (t: Test, schema: string): Promise<SqlClient> => {
      const client = await postgresClient(urlWithSchema(serverUrl, schema))
      t.teardown(() => client.close())
      return client
    }
    const suiteSchema = freshServerSchema(t, admin, 'idempotency_test')
    sqlSuite(t, async (t) => await clientOn(t, await freshServerSchema(t, admin, 'idempotency_test')), async (t) => await clientOn(t, await suiteSchema))
  })
}
