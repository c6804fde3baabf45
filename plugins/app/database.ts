import fp from 'fastify-plugin'
import { openDatabase } from '../../src/db/database.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** The database of DATABASE_URL, migrated at start; readiness probes it. Closed after in-flight requests. */
export default fp(async (fastify) => {
  const config = serviceDecorator(fastify, 'catsConfig')
  if (config.DATABASE_URL === undefined) {
    decorateService(fastify, 'catsDatabase', undefined)
    return
  }
  const database = await openDatabase({ ...config, DATABASE_URL: config.DATABASE_URL }, fastify.log)
  serviceDecorator(fastify, 'catsDependencies').set(database.status.name, database.status)
  fastify.addHook('onClose', async () => { await database.client.close() })
  decorateService(fastify, 'catsDatabase', database)
}, { name: 'database', dependencies: ['dependencies'] })
