import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { SessionList } from '../../src/auth/schemas.js'
import { BEARER_SECURITY } from '../../src/http/schemas.js'
import { badRequest, sessionNotFound, sessionsUnavailable, unauthorized } from '../../src/http/error-response-schemas.js'
import { InvalidToken, SessionNotFound } from '../../src/errors.js'

const sessions: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/sessions', {
    onRequest: fastify.authenticate,
    schema: {
      tags: ['auth'],
      operationId: 'listSessions',
      summary: 'The caller\'s live sessions: where they are logged in',
      description: 'Every live session of the token\'s user, oldest first: when it started, when it was last used (the login or ' +
        'the latest refresh), the client address and user agent at login, and which one is this token\'s.',
      security: BEARER_SECURITY,
      response: { 200: SessionList, 401: unauthorized, 503: sessionsUnavailable }
    }
  }, async (request) => {
    // The guard ran first and set the claims: a request without them never gets here.
    /* c8 ignore next */
    if (request.tokenClaims === null) throw new InvalidToken()
    return await fastify.sessions.list(request.tokenClaims)
  })

  fastify.delete('/sessions/:id', {
    onRequest: fastify.authenticate,
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
    /* c8 ignore next */
    if (request.tokenClaims === null) throw new InvalidToken()
    if (!await fastify.sessions.endOne(request.tokenClaims, request.params.id)) throw new SessionNotFound()
    return reply.code(204).send(null)
  })
}

export default sessions
