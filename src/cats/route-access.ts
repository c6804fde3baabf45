import type { FastifyInstance } from 'fastify'
import { unauthorized } from '../http/error-response-schemas.js'
import { BEARER_SECURITY, NO_SECURITY } from '../http/schemas.js'
import { serviceDecorator } from '../service-scope.js'

/**
 * Who may call the cats routes: anyone by default; with CATS_AUTH=required, the token guard runs on each of them,
 * and their documents name the bearer scheme and its 401.
 */
export function routeAccess (fastify: FastifyInstance) {
  const tokenRequired = serviceDecorator(fastify, 'catsConfig').CATS_AUTH === 'required'
  return {
    tokenRequired,
    authHook: tokenRequired ? { onRequest: serviceDecorator(fastify, 'catsAuthenticate') } : {},
    security: { security: tokenRequired ? BEARER_SECURITY : NO_SECURITY },
    authErrors: tokenRequired ? { 401: unauthorized } : {}
  }
}
