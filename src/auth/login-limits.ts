import type { FastifyInstance, FastifyRequest } from 'fastify'
import { LoginLimiterUnavailable, TooManyLoginAttempts } from '../http/errors.js'

/** The username of a login body, for the per-account limit (it runs before validation). */
function usernameOf (body: unknown): string {
  return typeof body === 'object' && body !== null && 'username' in body ? String(body.username) : ''
}

type LoginHook = (request: FastifyRequest) => Promise<void>

/**
 * Brute-force limits on login: one client may not try many passwords, and many
 * clients may not hammer one account. Each hook counts the attempt and throws
 * 429 past the limit, or 503 when the counters' store cannot be reached.
 */
export function loginLimits (fastify: FastifyInstance, limit: { max: number, windowMs: number }): { perClient: LoginHook, perAccount: LoginHook } {
  // With REDIS_URL the counters live in Redis: its status logs an outage once and feeds readiness.
  const limiterStore = fastify.dependencies.get('redis')
  const enforce = (keyGenerator: (request: FastifyRequest) => string): LoginHook => {
    const limiter = fastify.createRateLimit({ max: limit.max, timeWindow: limit.windowMs, keyGenerator })
    return async (request) => {
      const result = await limiter(request).catch((error: unknown) => {
        limiterStore?.failed(error)
        throw new LoginLimiterUnavailable({ cause: error })
      })
      limiterStore?.succeeded()
      if (result.isAllowed || !result.isExceeded) return
      throw Object.assign(new TooManyLoginAttempts(result.ttlInSeconds), { retryAfter: result.ttlInSeconds })
    }
  }
  return {
    perClient: enforce((request) => `client:${request.ip}`),
    perAccount: enforce((request) => `account:${usernameOf(request.body)}`)
  }
}
