import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { LoginBody, LoginReply } from '../../src/auth/schemas.js'
import { ErrorReply } from '../../src/http/schemas.js'
import { durationToSeconds } from '../../src/config.js'
import { httpError } from '../../src/http/error-handler.js'

/** The username of a login body, for the per-account limit (it runs before validation). */
function usernameOf (body: unknown): string {
  return typeof body === 'object' && body !== null && 'username' in body ? String(body.username) : ''
}

const auth: FastifyPluginAsyncTypebox = async (fastify) => {
  const { JWT_EXPIRES_IN, LOGIN_RATE_LIMIT_MAX, LOGIN_RATE_LIMIT_WINDOW } = fastify.config
  const expiresIn = durationToSeconds(JWT_EXPIRES_IN)

  // Brute force: one client may not try many passwords, and many clients may not hammer one account.
  const limit = { max: LOGIN_RATE_LIMIT_MAX, timeWindow: durationToSeconds(LOGIN_RATE_LIMIT_WINDOW) * 1000 }
  const perClient = fastify.createRateLimit({ ...limit, keyGenerator: (request) => `client:${request.ip}` })
  const perAccount = fastify.createRateLimit({ ...limit, keyGenerator: (request) => `account:${usernameOf(request.body)}` })
  const limiterStore = fastify.dependencies.get('redis')
  const enforce = (limiter: typeof perClient) => async (request: FastifyRequest): Promise<void> => {
    const result = await limiter(request).catch((error: unknown) => {
      limiterStore?.failed(error)
      throw httpError(503, 'Login is unavailable: the rate limit store cannot be reached', {
        code: 'AUTH_ERR_LIMITER_UNAVAILABLE', headers: { 'retry-after': '5' }, cause: error
      })
    })
    limiterStore?.succeeded()
    if (result.isAllowed || !result.isExceeded) return
    const retryAfter = String(result.ttlInSeconds)
    throw httpError(429, `Too many login attempts; retry in ${retryAfter} seconds`, { headers: { 'retry-after': retryAfter } })
  }

  fastify.post('/login', {
    onRequest: enforce(perClient),
    preValidation: enforce(perAccount),
    schema: {
      tags: ['auth'],
      summary: 'Exchange a username and password for an access token',
      body: LoginBody,
      response: { 200: LoginReply, 400: ErrorReply, 401: ErrorReply, 413: ErrorReply, 415: ErrorReply, 429: ErrorReply, 503: ErrorReply }
    }
  }, async (request, reply) => {
    const { username, password } = request.body
    const user = await fastify.users.verifyCredentials(username, password)
    if (user === undefined) throw httpError(401, 'Invalid username or password')
    const accessToken = fastify.jwt.sign({ sub: user.id, username: user.username })
    // RFC 6749 §5.1: token responses must not be cached.
    reply.header('cache-control', 'no-store')
    return { access_token: accessToken, token_type: 'Bearer' as const, expires_in: expiresIn }
  })
}

export default auth
