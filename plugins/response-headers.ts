import fp from 'fastify-plugin'
import cors from '@fastify/cors'
import { responseHeadersHook } from '../src/http/security-headers.js'

/**
 * Security headers and the request id on every response, and CORS only for
 * configured origins. The headers are the same for every response, so helmet
 * runs once, at start-up: @fastify/helmet would rebuild its middleware on each request.
 * The request id (see src/http/server-options.ts) is echoed so clients can quote it.
 */
export default fp(async (fastify) => {
  fastify.addHook('onRequest', responseHeadersHook())
  const origins = fastify.config.CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  if (origins.length > 0) {
    await fastify.register(cors, { origin: origins, methods: ['GET', 'POST', 'PUT', 'DELETE'] })
  }
}, { name: 'response-headers', dependencies: ['config'] })
