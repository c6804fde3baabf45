import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LoginBody, LoginReply } from '../../src/auth/schemas.js'
import { ErrorReply } from '../../src/http/schemas.js'
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
      summary: 'Exchange a username and password for an access token',
      body: LoginBody,
      response: { 200: LoginReply, 400: ErrorReply, 401: ErrorReply, 413: ErrorReply, 415: ErrorReply, 429: ErrorReply, 503: ErrorReply }
    }
  }, async (request, reply) => {
    const { username, password } = request.body
    const user = await fastify.users.verifyCredentials(username, password)
    if (user === undefined) throw new InvalidCredentials()
    // A new session: the access token carries its id (sid) and a jti of its own, plus a refresh token when they are on.
    const { accessToken, refreshToken } = await fastify.sessions.start(user)
    // RFC 6749 §5.1: token responses must not be cached.
    reply.header('cache-control', 'no-store')
    return { access_token: accessToken, token_type: 'Bearer' as const, expires_in: expiresIn, refresh_token: refreshToken }
  })
}

export default login
