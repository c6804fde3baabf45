import fp from 'fastify-plugin'
import { openCatsStore } from '../../src/cats/open-cats-store.js'
import type { CatsStore } from '../../src/cats/cats-store.js'

declare module 'fastify' {
  interface FastifyInstance {
    catsStore: CatsStore
  }
}

/** The cats: in the database when there is one, else in memory. */
export default fp(async (fastify) => {
  fastify.decorate('catsStore', await openCatsStore(fastify.config, fastify.database))
}, { name: 'cats-store', dependencies: ['database'] })
