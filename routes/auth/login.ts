import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LoginBody, LoginReply } from '../../src/auth/schemas.js'
import { ErrorReply } from '../../src/http/schemas.js'
import { durationToSeconds } from '../../src/config.js'
import { InvalidCredentials } from '../../src/http/errors.js'

const login: FastifyPluginAsyncTypebox = async (fastify) => {
  const config = fastify.config
  const expiresIn = durationToSeconds(config.JWT_EXPIRES_IN)

  fastify.post('/login', {
    // Every answer counts, including the protection's 429 and 503.
    onResponse: fastify.metrics?.countLogin ?? [],
    schema: {
      tags: ['auth'],
      summary: 'Exchange a username and password for an access token',
      description: `Only failed logins count against a client (an unknown username counts like a wrong password): ${config.LOGIN_MAX_FAILURES} ` +
        `failures for one username from one client address within ${config.LOGIN_FAILURE_WINDOW} lock that pair (429 with Retry-After; ` +
        `each further attempt while locked doubles the lock, up to ${config.LOGIN_LOCK_MAX}); more than ${config.LOGIN_CLIENT_MAX_FAILURES} ` +
        `failures from one client address within ${config.LOGIN_CLIENT_FAILURE_WINDOW} refuse it for every username.`,
      body: LoginBody,
      response: { 200: LoginReply, 400: ErrorReply, 401: ErrorReply, 413: ErrorReply, 415: ErrorReply, 429: ErrorReply, 503: ErrorReply }
    }
  }, async (request, reply) => {
    const { username, password } = request.body
    // Counted before the password is checked, the same way for unknown and known usernames.
    const attempt = { username, client: request.ip }
    await fastify.loginProtection.admit(attempt)
    const user = await fastify.users.verifyCredentials(username, password)
    if (user === undefined) throw new InvalidCredentials()
    await fastify.loginProtection.succeeded(attempt)
    const accessToken = fastify.jwt.sign({ sub: user.id, username: user.username })
    // RFC 6749 §5.1: token responses must not be cached.
    reply.header('cache-control', 'no-store')
    return { access_token: accessToken, token_type: 'Bearer' as const, expires_in: expiresIn }
  })
}

export default login
