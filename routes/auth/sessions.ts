import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { SessionList } from '../../src/auth/schemas.js'
import { BEARER_SECURITY } from '../../src/http/schemas.js'
import { badRequest, sessionNotFound, sessionsUnavailable, unauthorized } from '../../src/http/error-response-schemas.js'
import { SessionNotFound } from '../../src/errors.js'
import { serviceDecorator } from '../../src/service-scope.js'
import { verifiedOf } from '../../src/auth/tokens/token-guard.js'

const sessionRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const sessions = serviceDecorator(fastify, 'catsSessions')
  const authenticate = serviceDecorator(fastify, 'catsAuthenticate')
  fastify.get('/sessions', {
    onRequest: authenticate,
    schema: {
      tags: ['auth'],
      operationId: 'listSessions',
      summary: 'The caller\'s live sessions: where they are logged in',
      description: 'Every live session of the token\'s user, oldest first: when it started, when it was last used (the login or ' +
        'the latest refresh), the client address and user agent at login, and which one is this token\'s.',
      security: BEARER_SECURITY,
      response: { 200: SessionList, 401: unauthorized, 503: sessionsUnavailable }
    }
  }, async (request, reply) => {
    // The list names sessions and where they are used: no cache keeps it (as login's and refresh's tokens).
    reply.header('cache-control', 'no-store')
    return await sessions.list(verifiedOf(request).claims)
  })

  fastify.delete('/sessions/:id', {
    onRequest: authenticate,
    schema: {
      tags: ['auth'],
      operationId: 'endSession',
      summary: 'End one of the caller\'s sessions',
      description: 'The session ends as at its logout: its refresh token and access tokens are refused from then on, by every ' +
        'instance. Another user\'s session, an ended one and an unknown id all get the same 404.',
      security: BEARER_SECURITY,
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'The session\'s id, as `GET /auth/sessions` lists it' }) }),
      response: {
        204: Type.Null({ description: 'The session has ended' }),
        400: badRequest('The id is longer than 64 characters', 'params.id', 'must NOT have more than 64 characters'),
        401: unauthorized,
        404: sessionNotFound,
        503: sessionsUnavailable
      }
    }
  }, async (request, reply) => {
    if (!await sessions.endSession(verifiedOf(request).claims, request.params.id)) throw new SessionNotFound()
    return reply.code(204).send(null)
  })
}

export default sessionRoutes
