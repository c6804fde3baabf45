import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { RefreshBody, RefreshReply } from '../../src/auth/schemas.js'
import { NO_SECURITY } from '../../src/http/schemas.js'
import {
  badRequest, bodyTooLarge, invalidRefreshToken, sessionsUnavailable, tooManyRefreshes, unsupportedMediaType
} from '../../src/http/error-response-schemas.js'
import { InvalidRefreshToken } from '../../src/errors.js'
import { serviceDecorator } from '../../src/service-scope.js'

/** Present only with refresh tokens on (REFRESH_TOKENS=true); otherwise the route does not exist (404). */
const refresh: FastifyPluginAsyncTypebox = async (fastify) => {
  const sessions = serviceDecorator(fastify, 'catsSessions')
  const config = serviceDecorator(fastify, 'catsConfig')
  if (!sessions.refreshEnabled) return
  const expiresIn = config.durations.accessTokenSeconds

  fastify.post('/refresh', {
    schema: {
      tags: ['auth'],
      operationId: 'refreshToken',
      summary: 'Exchange a refresh token for a new access token and a new refresh token',
      description: 'The refresh token presented stops working. Presenting it again ends its whole session: ' +
        'its refresh tokens and every access token issued through it are refused from then on. ' +
        `One session may refresh at most ${config.REFRESH_RATE_LIMIT} times a minute (429 with Retry-After past it).`,
      security: NO_SECURITY,
      body: RefreshBody,
      response: {
        200: RefreshReply,
        400: badRequest('The body is not JSON, or refresh_token is missing or empty', 'body.refresh_token', 'must NOT have fewer than 1 characters'),
        401: invalidRefreshToken,
        413: bodyTooLarge,
        415: unsupportedMediaType,
        429: tooManyRefreshes,
        503: sessionsUnavailable
      }
    }
  }, async (request, reply) => {
    const tokens = await sessions.refresh(request.body.refresh_token)
    if (tokens === undefined) throw new InvalidRefreshToken()
    reply.header('cache-control', 'no-store')
    return { access_token: tokens.accessToken, token_type: 'Bearer' as const, expires_in: expiresIn, refresh_token: tokens.refreshToken }
  })
}

export default refresh
