import fp from 'fastify-plugin'
import cors from '@fastify/cors'
import { serviceDecorator } from '../../src/service-scope.js'

/** CORS for the origins of CORS_ORIGINS only; none by default. */
export default fp(async (fastify) => {
  const origins = serviceDecorator(fastify, 'catsConfig').CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  // A browser's script reads ETag for If-Match, and Link for the next page, only when they are exposed.
  if (origins.length > 0) await fastify.register(cors, { origin: origins, methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], exposedHeaders: ['ETag', 'Link'] })
}, { name: 'cors' })
