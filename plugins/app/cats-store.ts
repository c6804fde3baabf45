import fp from 'fastify-plugin'
import { openCatsStore } from '../../src/cats/open-cats-store.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** The cats: in the database when there is one, else in memory. */
export default fp(async (fastify) => {
  decorateService(fastify, 'catsStore', await openCatsStore(serviceDecorator(fastify, 'catsConfig'), serviceDecorator(fastify, 'catsDatabase')))
}, { name: 'cats-store', dependencies: ['database'] })
