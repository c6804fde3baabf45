import fp from 'fastify-plugin'
import { CatsRepository } from '../src/cats-repository.js'

declare module 'fastify' {
  interface FastifyInstance {
    cats: CatsRepository
  }
}

export default fp(async (fastify) => {
  fastify.decorate('cats', new CatsRepository())
}, { name: 'cats-repository' })
