import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import { DependencyStatus } from '../dependency-status.js'
import type { SqlClient } from './sql-client.js'

/** The database of DATABASE_URL (PostgreSQL or PGlite), migrated, and what is known of its health. */
export interface Database {
  client: SqlClient
  status: DependencyStatus
}

/**
 * Connects to DATABASE_URL and applies the pending migrations; the caller closes the client. The driver is
 * loaded only here, so a service without a database never loads it.
 */
export async function openDatabase (config: Config & { DATABASE_URL: string }, log: FastifyBaseLogger): Promise<Database> {
  const [{ connect }, { migrate }] = await Promise.all([import('./sql-client.js'), import('./migrations.js')])
  const { DATABASE_URL, DATABASE_POOL_SIZE, DATABASE_PREPARED_STATEMENTS } = config
  const client = await connect(DATABASE_URL, { poolSize: DATABASE_POOL_SIZE, preparedStatements: DATABASE_PREPARED_STATEMENTS })
  try {
    for (const { version, name } of await migrate(client)) log.info({ version, name }, 'applied database migration')
  } catch (error) {
    await client.close()
    throw new Error(`DATABASE_URL: could not prepare the database (${String(error)})`)
  }
  return { client, status: new DependencyStatus('database', log, (timeoutMs) => client.ping(timeoutMs)) }
}
