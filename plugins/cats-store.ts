import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { MemoryCatsStore } from '../src/cats/memory-cats-store.js'
import type { CatsStore, StoreLimits } from '../src/cats/cats-store.js'
import type { SqlClient } from '../src/cats/sql-client.js'
import type { SqlCatsStore } from '../src/cats/sql-cats-store.js'
import { DependencyStatus } from '../src/dependency-status.js'

declare module 'fastify' {
  interface FastifyInstance {
    catsStore: CatsStore
    /** The database when DATABASE_URL is set (the session stores share it), else undefined. */
    database: { client: SqlClient, status: DependencyStatus } | undefined
  }
}

async function openSqlStore (fastify: FastifyInstance, databaseUrl: string, limits: StoreLimits): Promise<SqlCatsStore> {
  // Loaded only when a database is used, like the drivers they load.
  const [{ connect }, { SqlCatsStore }, { migrate }] = await Promise.all([
    import('../src/cats/sql-client.js'),
    import('../src/cats/sql-cats-store.js'),
    import('../src/cats/sql-migrations.js')
  ])
  const { DATABASE_POOL_SIZE, DATABASE_PREPARED_STATEMENTS } = fastify.config
  const client = await connect(databaseUrl, { poolSize: DATABASE_POOL_SIZE, preparedStatements: DATABASE_PREPARED_STATEMENTS })
  try {
    for (const { version, name } of await migrate(client)) fastify.log.info({ version, name }, 'applied database migration')
  } catch (error) {
    await client.close()
    throw new Error(`DATABASE_URL: could not prepare the database (${String(error)})`)
  }
  const status = new DependencyStatus('database', fastify.log, (timeoutMs) => client.ping(timeoutMs))
  fastify.dependencies.set(status.name, status)
  fastify.decorate('database', { client, status })
  return new SqlCatsStore(client, limits, { availability: status })
}

/** The cats store: in memory unless DATABASE_URL names PostgreSQL or PGlite. Closed after in-flight requests. */
export default fp(async (fastify) => {
  const config = fastify.config
  const limits: StoreLimits = {
    maxCats: config.CATS_MAX,
    maxCatBytes: config.BODY_LIMIT,
    idempotencyKeys: {
      maxKeys: config.IDEMPOTENCY_KEYS_MAX,
      maxBytes: config.IDEMPOTENCY_KEYS_MAX_BYTES,
      clientMaxKeys: config.IDEMPOTENCY_CLIENT_KEYS_MAX,
      clientMaxBytes: config.IDEMPOTENCY_CLIENT_KEYS_MAX_BYTES
    }
  }
  const { DATABASE_URL } = config
  if (DATABASE_URL === undefined) fastify.decorate('database', undefined)
  const store: CatsStore = DATABASE_URL === undefined ? new MemoryCatsStore(limits) : await openSqlStore(fastify, DATABASE_URL, limits)
  fastify.decorate('catsStore', store)
  fastify.addHook('onClose', async () => {
    await store.close()
  })
}, { name: 'cats-store', dependencies: ['config', 'dependencies'] })
