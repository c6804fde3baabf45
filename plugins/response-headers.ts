import { IncomingMessage, ServerResponse, type OutgoingHttpHeaders } from 'node:http'
import { Socket } from 'node:net'
import fp from 'fastify-plugin'
import helmet from 'helmet'
import cors from '@fastify/cors'

/**
 * The headers OWASP's REST security cheat sheet lists for an API, computed by
 * helmet: a CSP that lets a JSON response load and frame nothing, HSTS, nosniff,
 * DENY framing, and no referrer. Helmet's legacy headers for old browsers
 * rendering HTML are left out: every header costs CPU on every response. The
 * /docs UI sends its own CSP (see plugins/swagger.ts).
 */
export function apiSecurityHeaders (): OutgoingHttpHeaders {
  const response = new ServerResponse(new IncomingMessage(new Socket()))
  helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginOpenerPolicy: false,
    frameguard: { action: 'deny' },
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false
  })(response.req, response, () => {})
  return response.getHeaders()
}

/**
 * Security headers and the request id on every response, and CORS only for
 * configured origins. The headers are the same for every response, so helmet
 * runs once here: @fastify/helmet would rebuild its middleware on each request.
 * The request id (see src/server-options.ts) is echoed so clients can quote it.
 */
export default fp(async (fastify) => {
  const headers = apiSecurityHeaders()
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.headers(headers).header('x-request-id', request.id)
    done()
  })
  const origins = fastify.config.CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  if (origins.length > 0) {
    await fastify.register(cors, { origin: origins, methods: ['GET', 'POST', 'PUT', 'DELETE'] })
  }
}, { name: 'response-headers', dependencies: ['config'] })
