import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { BEARER_SECURITY } from '../../src/http/schemas.js'
import { badRequest, sessionsUnavailable, unauthorized } from '../../src/http/error-response-schemas.js'
import { LogoutQuery } from '../../src/auth/schemas.js'
import { serviceDecorator } from '../../src/service-scope.js'
import { verifiedOf } from '../../src/auth/tokens/token-guard.js'
import { InvalidToken } from '../../src/errors.js'

const logout: FastifyPluginAsyncTypebox = async (fastify) => {
  const sessions = serviceDecorator(fastify, 'catsSessions')
  // With REDIS_WAIT_REPLICAS the guard lets a token of a denied session through: it may end that session again
  // (the retry of a logout whose replicas fell short), never the user's other sessions.
  const deniedPass = serviceDecorator(fastify, 'catsConfig').REDIS_WAIT_REPLICAS > 0
  fastify.post('/logout', {
    onRequest: serviceDecorator(fastify, 'catsLogoutGuard'),
    schema: {
      tags: ['auth'],
      operationId: 'logout',
      summary: 'End the session of the access token, or the user\'s other sessions, or all',
      description: 'The session of the access token ends: from then on, by every instance, the token is refused (401), ' +
        'and so are its session\'s refresh token and the other access tokens issued through it. With `scope=others` the ' +
        'user\'s other sessions end instead, and with `scope=global` all of them.',
      security: BEARER_SECURITY,
      querystring: LogoutQuery,
      response: {
        204: Type.Null({ description: 'Logged out' }),
        400: badRequest('The scope is not `local`, `others` or `global`', 'querystring.scope', 'must be equal to one of the allowed values'),
        401: unauthorized,
        503: sessionsUnavailable
      }
    }
  }, async (request, reply) => {
    const { claims } = verifiedOf(request)
    if (deniedPass && request.query.scope !== 'local' && await sessions.isRevoked(claims)) {
      reply.header('www-authenticate', 'Bearer error="invalid_token"')
      throw new InvalidToken()
    }
    await sessions.endSessions(claims, request.query.scope)
    return reply.code(204).send(null)
  })
}

export default logout
