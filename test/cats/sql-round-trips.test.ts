import t, { type Test } from 'tap'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { withObjects, type CatObjects } from '../support/cat-objects.js'
import { NO_LIMITS, type StoreLimits } from '../../src/cats/cats-store.js'
import { SqlCatsStore } from '../../src/cats/sql-cats-store.js'
import { pgliteClient, postgresClient, type ClientOptions, type SqlClient } from '../../src/db/sql-client.js'
import { migrate } from '../../src/db/migrations.js'
import { CatTooLarge } from '../../src/errors.js'
import { mergesMatchMemory, outcome } from '../support/merge-property.js'
import { PgQueryCounter } from '../support/pg-queries.js'
import { adminClient, freshSchemaName, freshSchemaOn, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { pgliteCopy } from '../support/pglite-template.js'

/**
 * Round trips of the SQL store. PUT is one statement: one round trip to the
 * database, the same JSON text as the in-memory store byte for byte (key order
 * included), and concurrent merges into one cat, from one instance or several,
 * lose nothing. The reads of one turn of the event loop share one statement,
 * each answered as if alone, and so do the merges and the creates. Reproduce a failure of the generated cases
 * (test/support/merge-property.ts) with FC_SEED=<seed>.
 */

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const withLimit = (maxCatBytes: number): StoreLimits => ({ ...NO_LIMITS, maxCatBytes })

/** A client on a fresh, migrated schema. */
type SchemaOpener = (t: Test) => Promise<SqlClient>
/**
 * Opens new clients (each a pool of its own, as another instance has) on the server directly or `through` a proxy,
 * with prepared statements where the server allows them unless said otherwise.
 */
type ClientFactory = (options?: ClientOptions & { through?: URL }) => Promise<SqlClient>
interface WireTarget {
  /** The server's address. */
  url: URL
  /** A client factory on a fresh schema, migrated by the first client; everything is closed and dropped on teardown. */
  open: (t: Test) => Promise<ClientFactory>
}

// Both open copies of an initialised empty database (creating one from nothing takes seconds more), and open now.
const inProcess = pgliteCopy(t).then(async (dir) => await pgliteClient(dir))
const served = pgliteCopy(t).then(async (dir) => await PGlite.create(dir))
t.teardown(async () => {
  await (await inProcess).close()
  await (await served).close()
})

/** The property on a client of a fresh, migrated schema, in as many generated cases as its suite runs. */
function sameAsMemory (t: Test, openSchema: SchemaOpener, numRuns: number): void {
  t.test('every merge gives the memory store\'s JSON text, byte for byte, and its refusals', async (t) => {
    await mergesMatchMemory(await openSchema(t), numRuns)
    t.pass(`${numRuns} generated cats, up to 5 merges each`)
  })
}

function overTheWire (t: Test, target: WireTarget): void {
  /** A store whose client reaches the database through a proxy that counts the queries. */
  async function countedStore (t: Test, limits: StoreLimits = NO_LIMITS, preparedStatements?: boolean): Promise<{ store: SqlCatsStore & CatObjects, client: SqlClient, counter: PgQueryCounter }> {
    const proxy = new TcpProxy(target.url)
    const counter = new PgQueryCounter()
    proxy.watch = counter.feed
    await proxy.start()
    t.teardown(() => proxy.stop())
    const client = await (await target.open(t))({ through: new URL(proxy.url(target.url)), preparedStatements })
    return { store: withObjects(new SqlCatsStore(client, limits)), client, counter }
  }

  t.test('a PUT is one query: merged, no cat, or too large', async (t) => {
    // Prepared statements too: one connection at a time here, so they cannot collide even on a shared session.
    const { store, client, counter } = await countedStore(t, withLimit(200), true)
    await store.create(tom)
    const queries = async (work: () => Promise<unknown>): Promise<number> => {
      const before = counter.count
      await work()
      return counter.count - before
    }
    t.equal(await queries(() => client.transaction(async (tx) => tx.query('SELECT 1'))), 3, 'the counter sees BEGIN, SELECT, COMMIT')
    t.equal(await queries(() => store.updateCat(1, { color: 'black', 2: 'two', id: 9 })), 1)
    t.equal(await queries(() => store.updateCat(1, { color: 'black' })), 1, 'again, with the statement prepared')
    t.strictSame(await store.findCat(1), { 2: 'two', id: 1, ...tom, color: 'black' })
    t.equal(await queries(() => store.updateCat(5, { color: 'white' })), 1)
    t.equal(await queries(() => t.rejects(store.updateCat(1, { big: 'x'.repeat(200) }), CatTooLarge)), 1)
    t.equal((await store.find(1))?.json, '{"2":"two","id":1,"name":"Tom","age":3,"breed":"Siamese","color":"black"}', 'unchanged by the refused merge')
  })

  t.test('the reads of one turn of the event loop are one query, each answered as if alone', async (t) => {
    // Prepared where the target allows it: this is a second connection, which would collide on a shared session.
    const { store, counter } = await countedStore(t, NO_LIMITS, undefined)
    for (const name of ['Tom', 'Felix', 'Kitty']) await store.create({ ...tom, name })
    await store.remove(2)
    await store.create({ ...tom, name: 'Luna' })
    const queries = async (ids: number[]): Promise<{ names: Array<string | undefined>, queries: number }> => {
      const before = counter.count
      const found = await Promise.all(ids.map((id) => store.find(id)))
      const names = found.map((cat) => cat === undefined ? undefined : String(JSON.parse(cat.json).name))
      return { names, queries: counter.count - before }
    }
    t.strictSame(await queries([3, 1, 2, 3, 99, 1, -4]), { names: ['Kitty', 'Tom', undefined, 'Kitty', undefined, 'Tom', undefined], queries: 1 },
      'the earliest created cat of an id (Kitty, not Luna), nothing for a free id, repeated ids answered each')
    await store.updateCat(1, { toy: 'ball' })
    t.match(JSON.parse((await store.find(1))?.json ?? ''), { name: 'Tom', toy: 'ball' }, 'a read after an answered write sees it')
    const many = await queries(Array.from({ length: 1200 }, (_, index) => 1 + (index % 3)))
    t.equal(many.queries, 3, '500 reads at most in one query')
    t.strictSame(many.names.slice(0, 3), ['Tom', undefined, 'Kitty'])
    t.equal(many.names.filter((name) => name === 'Kitty').length, 400)
  })

  t.test('the merges of one turn of the event loop are one query, each with its own outcome, in the order sent', async (t) => {
    const { store, client, counter } = await countedStore(t, withLimit(120))
    for (const name of ['Tom', 'Felix', 'Kitty']) await store.create({ ...tom, name })
    const before = counter.count
    const outcomes = await Promise.all([
      outcome(store, 3, { toy: 'ball' }),
      outcome(store, 1, { big: 'x'.repeat(100) }),
      outcome(store, 3, { toy: 'mouse', age: 4 }),
      outcome(store, 9, { toy: 'ball' }),
      outcome(store, 2, {}),
      outcome(store, 1, { age: 5 })
    ])
    t.equal(counter.count - before, 1, 'one query')
    t.strictSame(outcomes, [
      '{"id":3,"name":"Kitty","age":3,"breed":"Siamese","toy":"ball"}',
      'too large: The merged cat would be larger than 120 bytes',
      '{"id":3,"name":"Kitty","age":4,"breed":"Siamese","toy":"mouse"}',
      'no cat',
      '{"id":2,"name":"Felix","age":3,"breed":"Siamese"}',
      '{"id":1,"name":"Tom","age":5,"breed":"Siamese"}'
    ], 'a merge into a cat sees the ones sent before it; a refused merge leaves the others')
    t.equal((await store.find(3))?.json, outcomes[2])
    t.equal((await store.find(1))?.json, outcomes[5])
    const unlimited = withObjects(new SqlCatsStore(client))
    const many = await Promise.all(Array.from({ length: 250 }, (_, index) => unlimited.updateCat(2, { [`key${index}`]: index })))
    t.equal(counter.count - before, 1 + 3 + 2, '100 merges at most in one query')
    const sizes = many.map((cat) => Object.keys(cat ?? {}).length)
    // Two statements may run at once, so which of them locks the cat first is open; inside each, the order sent holds.
    for (const [first, last] of [[0, 99], [100, 199], [200, 249]]) {
      const statement = sizes.slice(first, last + 1)
      t.strictSame(statement, statement.map((_, index) => statement[0] + index), `merges ${first}-${last}: in the order sent`)
    }
    t.strictSame([...sizes].sort((a, b) => a - b), many.map((_, index) => 5 + index), 'one after another, none lost')
  })

  t.test('the creates of one turn of the event loop are one query: ids and creation order as they arrived, the limit per cat', async (t) => {
    const { store, client, counter } = await countedStore(t, { ...NO_LIMITS, maxCats: 5 })
    await store.create({ ...tom, name: 'First' })
    const before = counter.count
    const names = ['A', 'B', 'C', 'D', 'E', 'F']
    const created = await Promise.allSettled(names.map((name) => store.create({ ...tom, name })))
    t.equal(counter.count - before, 1, 'one query')
    t.strictSame(created.slice(0, 4).map((result) => result.status === 'fulfilled' ? result.value : undefined),
      names.slice(0, 4).map((name, index) => ({ id: 2 + index, name, age: 3, breed: 'Siamese' })), 'ids 2 to 5 in the order sent')
    t.match(created.slice(4), [{ status: 'rejected', reason: { code: 'CATS_ERR_COLLECTION_FULL' } }, { status: 'rejected', reason: { code: 'CATS_ERR_COLLECTION_FULL' } }],
      'past the limit each is refused, alone')
    t.equal(await store.count(), 5)
    t.strictSame((await store.list()).map((cat) => cat.name), ['First', 'A', 'B', 'C', 'D'], 'creation order as sent')
    const unlimited = withObjects(new SqlCatsStore(client))
    await Promise.all(Array.from({ length: 150 }, (_, index) => unlimited.create({ ...tom, name: `cat${index}` })))
    t.equal(counter.count - before, 1 + 2 + 2, '(and count, list) then 100 creates at most in one query')
    t.strictSame((await unlimited.list()).slice(5).map((cat) => [cat.id, cat.name]), Array.from({ length: 150 }, (_, index) => [6 + index, `cat${index}`]))
  })

  t.test('two instances creating at once give every cat its own id', async (t) => {
    const openClient = await target.open(t)
    const stores = [withObjects(new SqlCatsStore(await openClient())), withObjects(new SqlCatsStore(await openClient()))]
    await Promise.all(Array.from({ length: 300 }, (_, index) => stores[index % 2].create({ ...tom, name: `cat${index}` })))
    const cats = await stores[0].list()
    t.strictSame(cats.map((cat) => cat.id), Array.from({ length: 300 }, (_, index) => index + 1), 'ids 1 to 300 in creation order')
    t.equal(new Set(cats.map((cat) => cat.name)).size, 300, 'every cat stored once')
    t.equal(await stores[1].count(), 300)
  })

  t.test('two instances merging into the same cats in opposite orders never deadlock', async (t) => {
    const openClient = await target.open(t)
    const stores = [withObjects(new SqlCatsStore(await openClient())), withObjects(new SqlCatsStore(await openClient()))]
    for (let id = 1; id <= 5; id++) await stores[0].create(tom)
    const ids = Array.from({ length: 200 }, (_, index) => 1 + (index % 5))
    // The first instance sends the ids ascending, the second descending: locked as sent, each would hold what the other waits for.
    const merged = await Promise.all([
      ...ids.map((id, index) => stores[0].update(id, { [`a${index}`]: index })),
      ...ids.map((id, index) => stores[1].update(6 - id, { [`b${index}`]: index }))
    ])
    t.equal(merged.filter((cat) => cat !== undefined).length, 400, 'every merge done')
    const found = await Promise.all([1, 2, 3, 4, 5].map((id) => stores[1].findCat(id)))
    t.strictSame(found.map((cat) => Object.keys(cat ?? {}).length), [84, 84, 84, 84, 84], 'each cat has its 4 fields and 80 merged ones')
  })

  t.test('concurrent PUTs into one cat from two instances lose no field', async (t) => {
    const openClient = await target.open(t)
    const stores = [withObjects(new SqlCatsStore(await openClient())), withObjects(new SqlCatsStore(await openClient()))]
    await stores[0].create(tom)
    const keys = Array.from({ length: 100 }, (_, index) => `key${index}`)
    const merged = await Promise.all(keys.map((key, index) => stores[index % 2].updateCat(1, { [key]: index, last: key })))
    t.equal(merged.length, keys.length)
    const found = await stores[1].findCat(1)
    t.strictSame(keys.map((key) => found?.[key]), keys.map((_, index) => index), 'every merged field is there')
    t.match(found, { id: 1, ...tom })
    const sizes = merged.map((cat) => Object.keys(cat ?? {}).length).sort((a, b) => a - b)
    t.strictSame(sizes, keys.map((_, index) => 6 + index), 'each merge saw all the merges before it')
  })
}

t.test('PGlite in process (pglite://<directory>)', async (t) => {
  const shared = await inProcess
  // Fewer cases than on the server, whose statements cost this process little: test:stress runs hundreds here.
  sameAsMemory(t, async (t) => {
    const client = await freshSchemaOn(t, shared, 'cats_merge')
    await migrate(client)
    return client
  }, 20)
})

t.test('node-postgres to a PGlite socket server', async (t) => {
  const servedDb = await served
  const server = new PGLiteSocketServer({ db: servedDb, host: '127.0.0.1', port: 0, maxConnections: 100 })
  await server.start()
  t.teardown(() => server.stop())
  const url = new URL(`postgres://postgres@${server.getServerConn()}/postgres`)
  overTheWire(t, {
    url,
    // The socket server gives every connection the same PGlite session, so its search_path is set there
    // (and two connections' named statements would collide there).
    open: async (t) => {
      const schema = freshSchemaName('cats_merge')
      await servedDb.exec(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`)
      const clients: SqlClient[] = []
      t.teardown(async () => {
        for (const client of clients) await client.close()
        await servedDb.exec(`SET search_path TO public; DROP SCHEMA ${schema} CASCADE`)
      })
      let migrated = false
      return async ({ through = url, preparedStatements = false } = {}) => {
        const client = await postgresClient(through.href, { preparedStatements })
        clients.push(client)
        if (!migrated) await migrate(client)
        migrated = true
        return client
      }
    }
  })
})

const serverUrl = process.env.TEST_DATABASE_URL
if (serverUrl === undefined || serverUrl === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server runs were skipped')
} else {
  t.test('node-postgres to the PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    const admin = await adminClient(t, serverUrl)
    const url = new URL(serverUrl)
    const open: WireTarget['open'] = async (t) => {
      const schema = await freshServerSchema(t, admin, 'cats_merge')
      const clients: SqlClient[] = []
      t.teardown(async () => {
        for (const client of clients) await client.close()
      })
      let migrated = false
      return async ({ through = url, preparedStatements } = {}) => {
        const client = await postgresClient(urlWithSchema(through.href, schema), { preparedStatements })
        clients.push(client)
        if (!migrated) await migrate(client)
        migrated = true
        return client
      }
    }
    overTheWire(t, { url, open })
    sameAsMemory(t, async (t) => (await open(t))(), 60)
  })
}
