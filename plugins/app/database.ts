import fp from 'fastify-plugin'
import { openDatabase, type Database } from '../../src/db/database.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The database when DATABASE_URL is set (cats, sessions), else undefined. */
    database: Database | undefined
  }
}

/** The database of DATABASE_URL, migrated at start; readiness probes it. Closed after in-flight requests. */
export default fp(async (fastify) => {
  const { config } = fastify
  if (config.DATABASE_URL === undefined) {
    fastify.decorate('database', undefined)
    return
  }
  const database = await openDatabase({ ...config, DATABASE_URL: config.DATABASE_URL }, fastify.log)
  fastify.dependencies.set(database.status.name, database.status)
  fastify.addHook('onClose', async () => { await database.client.close() })
  fastify.decorate('database', database)
}, { name: 'database', dependencies: ['dependencies'] })
