import fp from 'fastify-plugin'
import { securityHeaders } from '../../src/http/security-headers.js'

/** The security headers and the request id on every response. */
export default fp(async (fastify) => {
  fastify.addHook('onRequest', securityHeaders)
}, { name: 'security-headers' })
