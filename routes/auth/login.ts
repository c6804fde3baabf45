import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LoginBody, LoginReply } from '../../src/auth/schemas.js'
import { NO_SECURITY, ref } from '../../src/http/schemas.js'
import {
  badRequest, bodyTooLarge, invalidCredentials, loginUnavailable, tooManyLoginAttempts, unsupportedMediaType
} from '../../src/http/error-response-schemas.js'
import { InvalidCredentials } from '../../src/errors.js'
import { addressOf, clientAddress } from '../../src/http/client-address.js'
import { serviceDecorator } from '../../src/service-scope.js'

const login: FastifyPluginAsyncTypebox = async (fastify) => {
  const config = serviceDecorator(fastify, 'catsConfig')
  const protection = serviceDecorator(fastify, 'catsLoginProtection')
  const users = serviceDecorator(fastify, 'catsUsers')
  const sessions = serviceDecorator(fastify, 'catsSessions')
  const expiresIn = config.durations.accessTokenSeconds

  fastify.post('/login', {
    // Every answer counts, including the protection's 429 and 503.
    onResponse: serviceDecorator(fastify, 'catsMetrics')?.countLogin ?? [],
    schema: {
      tags: ['auth'],
      operationId: 'login',
      summary: 'Exchange a username and password for an access token',
      description: `Only failed logins count against a client (an unknown username counts like a wrong password): ${config.LOGIN_MAX_FAILURES} ` +
        `failures for one username from one client address within ${config.LOGIN_FAILURE_WINDOW} lock that pair (429 with Retry-After; ` +
        `each further attempt while locked doubles the lock, up to ${config.LOGIN_LOCK_MAX}); more than ${config.LOGIN_CLIENT_MAX_FAILURES} ` +
        `failures from one client address within ${config.LOGIN_CLIENT_FAILURE_WINDOW} refuse it for every username.`,
      security: NO_SECURITY,
      body: ref(LoginBody),
      response: {
        200: ref(LoginReply, { description: 'Logged in: a bearer token and its lifetime' }),
        400: badRequest('The body is not JSON, or a field is missing or empty', 'body.username', 'must NOT have fewer than 1 characters'),
        401: invalidCredentials,
        413: bodyTooLarge,
        415: unsupportedMediaType,
        429: tooManyLoginAttempts,
        503: loginUnavailable
      }
    }
  }, async (request, reply) => {
    const { username, password } = request.body
    // The response closes before it is sent only when the client went away: its login is not hashed then.
    const clientGone = new AbortController()
    reply.raw.once('close', () => { if (!reply.raw.writableEnded) clientGone.abort() })
    // Refused (429) or counted by the protection, the same way for unknown and known usernames; per client
    // address as every limit per client counts it (an IPv6 client by its /64).
    const user = await protection.check(username, clientAddress(addressOf(request)),
      () => users.verifyCredentials(username, password, clientGone.signal))
    if (user === undefined) throw new InvalidCredentials()
    // A new session: the access token carries its id (sid) and a jti of its own, plus a refresh token when they are on.
    const { accessToken, refreshToken } = await sessions.start(user, { address: addressOf(request), userAgent: request.headers['user-agent'] ?? '' })
    // RFC 6749 §5.1: token responses must not be cached.
    reply.header('cache-control', 'no-store')
    return { access_token: accessToken, token_type: 'Bearer' as const, expires_in: expiresIn, refresh_token: refreshToken }
  })
}

export default login
