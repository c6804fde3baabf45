import fp from 'fastify-plugin'
import cors from '@fastify/cors'

/** CORS for the origins of CORS_ORIGINS only; none by default. */
export default fp(async (fastify) => {
  const origins = fastify.config.CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  if (origins.length > 0) await fastify.register(cors, { origin: origins, methods: ['GET', 'POST', 'PUT', 'DELETE'] })
}, { name: 'cors' })
