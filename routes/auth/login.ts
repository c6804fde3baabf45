import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LoginBody, LoginReply } from '../../src/auth/schemas.js'
import { NO_SECURITY, ref } from '../../src/http/schemas.js'
import {
  badRequest, bodyTooLarge, invalidCredentials, loginUnavailable, tooManyLoginAttempts, unsupportedMediaType
} from '../../src/http/error-responses.js'
import { durationToSeconds } from '../../src/config.js'
import { InvalidCredentials } from '../../src/http/errors.js'
import { loginLimits } from '../../src/auth/login-limits.js'

const login: FastifyPluginAsyncTypebox = async (fastify) => {
  const { JWT_EXPIRES_IN, LOGIN_RATE_LIMIT_MAX, LOGIN_RATE_LIMIT_WINDOW } = fastify.config
  const expiresIn = durationToSeconds(JWT_EXPIRES_IN)

  const { perClient, perAccount } = loginLimits(fastify, {
    max: LOGIN_RATE_LIMIT_MAX,
    windowMs: durationToSeconds(LOGIN_RATE_LIMIT_WINDOW) * 1000
  })

  fastify.post('/login', {
    onRequest: perClient,
    preValidation: perAccount,
    // Every answer counts, including the limits' 429 and 503 that end the request before the handler.
    onResponse: fastify.metrics?.countLogin ?? [],
    schema: {
      tags: ['auth'],
      operationId: 'login',
      summary: 'Exchange a username and password for an access token',
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
    const user = await fastify.users.verifyCredentials(username, password, clientGone.signal)
    if (user === undefined) throw new InvalidCredentials()
    const accessToken = fastify.jwt.sign({ sub: user.id, username: user.username })
    // RFC 6749 §5.1: token responses must not be cached.
    reply.header('cache-control', 'no-store')
    return { access_token: accessToken, token_type: 'Bearer' as const, expires_in: expiresIn }
  })
}

export default login
