import fp from 'fastify-plugin'
import cors from '@fastify/cors'
import { apiSecurityHeaders } from '../src/http/security-headers.js'

/**
 * Security headers and the request id on every response, and CORS only for
 * configured origins. The headers are the same for every response, so helmet
 * runs once here: @fastify/helmet would rebuild its middleware on each request.
 * The request id (see src/http/server-options.ts) is echoed so clients can quote it.
 */
export default fp(async (fastify) => {
  // Name and value pairs read from an array: reply.headers() would walk the keys of an object
  // (a null-prototype one, as Node builds it) on every request, which counted about 2% more instructions.
  const headers = Object.entries(apiSecurityHeaders())
  fastify.addHook('onRequest', (request, reply, done) => {
    for (const [name, value] of headers) reply.header(name, value)
    reply.header('x-request-id', request.id)
    done()
  })
  const origins = fastify.config.CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  if (origins.length > 0) {
    await fastify.register(cors, { origin: origins, methods: ['GET', 'POST', 'PUT', 'DELETE'] })
  }
}, { name: 'response-headers', dependencies: ['config'] })
