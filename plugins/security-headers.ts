import fp from 'fastify-plugin'
import helmet from '@fastify/helmet'
import cors from '@fastify/cors'

/**
 * Security headers on every response (helmet's defaults also suit the
 * same-origin scripts of the /docs UI), and CORS only for configured origins.
 */
export default fp(async (fastify) => {
  await fastify.register(helmet)
  const origins = fastify.config.CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  if (origins.length > 0) {
    await fastify.register(cors, { origin: origins, methods: ['GET', 'POST', 'PUT', 'DELETE'] })
  }
}, { name: 'security-headers', dependencies: ['config'] })
