import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import { DependencyStatus } from '../dependency-status.js'
import type { SqlClient } from './sql-client.js'

/** The database of DATABASE_URL (PostgreSQL or PGlite), migrated, and what is known of its health. */
export interface Database {
  client: SqlClient
  status: DependencyStatus
  /** The schema of the package's objects (DATABASE_SCHEMA, else the connection's current schema): every statement names it. */
  schema: string
}

/**
 * Connects to DATABASE_URL and applies the pending migrations; the caller closes the client. The driver is
 * loaded only here, so a service without a database never loads it.
 */
export async function openDatabase (config: Config & { DATABASE_URL: string }, log: FastifyBaseLogger): Promise<Database> {
  const [{ connect }, { migrate }, { ownSchema }, { storeProbe }] = await Promise.all([
    import('./sql-client.js'), import('./migrations.js'), import('./own-schema.js'), import('./store-probe.js')
  ])
  const { DATABASE_URL, DATABASE_POOL_SIZE, DATABASE_PREPARED_STATEMENTS, DATABASE_SCHEMA, DATABASE_POOLER } = config
  const client = await connect(DATABASE_URL, { poolSize: DATABASE_POOL_SIZE, preparedStatements: DATABASE_PREPARED_STATEMENTS, pooled: DATABASE_POOLER !== 'none' })
  let schema: string
  try {
    schema = await ownSchema(client, DATABASE_SCHEMA)
    for (const { version, name } of await migrate(client, 'max', schema)) log.info({ version, name, schema }, 'applied database migration')
  } catch (error) {
    await client.close()
    throw new Error(`DATABASE_URL: could not prepare the database (${String(error)})`)
  }
  const probe = storeProbe(schema)
  return { client, schema, status: new DependencyStatus('database', log, (timeoutMs) => client.ping(timeoutMs, probe)) }
}
