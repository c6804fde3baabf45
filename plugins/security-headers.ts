import { IncomingMessage, ServerResponse, type OutgoingHttpHeaders } from 'node:http'
import { Socket } from 'node:net'
import fp from 'fastify-plugin'
import helmet from 'helmet'
import cors from '@fastify/cors'

/**
 * The headers helmet sets, minus the legacy ones that only concern old browsers
 * rendering HTML (OWASP's REST security cheat sheet lists what an API needs:
 * CSP, HSTS, nosniff, frame options). Every header costs CPU on every response.
 * They are the same for every response, so helmet runs once here: @fastify/helmet
 * would rebuild its middleware on each request (about 20 µs, more than a whole
 * /profile request).
 */
function helmetHeaders (): OutgoingHttpHeaders {
  const response = new ServerResponse(new IncomingMessage(new Socket()))
  helmet({
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false
  })(response.req, response, () => {})
  return response.getHeaders()
}

/**
 * Security headers on every response (helmet's defaults also suit the
 * same-origin scripts of the /docs UI), and CORS only for configured origins.
 */
export default fp(async (fastify) => {
  const headers = helmetHeaders()
  fastify.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers)
    done()
  })
  const origins = fastify.config.CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  if (origins.length > 0) {
    await fastify.register(cors, { origin: origins, methods: ['GET', 'POST', 'PUT', 'DELETE'] })
  }
}, { name: 'security-headers', dependencies: ['config'] })
