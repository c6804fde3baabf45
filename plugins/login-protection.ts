import fp from 'fastify-plugin'
import { durationToSeconds } from '../src/config.js'
import { MemoryLoginAttempts, type LoginPolicy } from '../src/auth/login-attempts.js'
import { LoginProtection } from '../src/auth/login-protection.js'
import { RedisLoginAttempts } from '../src/auth/redis-login-attempts.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts failed logins and refuses locked ones (routes/auth/login.ts). */
    loginProtection: LoginProtection
  }
}

/** The failure counters: in Redis when REDIS_URL is set, shared by every instance; in this process otherwise. */
export default fp(async (fastify) => {
  const config = fastify.config
  const ms = (duration: string): number => durationToSeconds(duration) * 1000
  const policy: LoginPolicy = {
    maxFailures: config.LOGIN_MAX_FAILURES,
    windowMs: ms(config.LOGIN_FAILURE_WINDOW),
    lockMs: ms(config.LOGIN_LOCK_DURATION),
    lockMaxMs: ms(config.LOGIN_LOCK_MAX),
    clientMaxFailures: config.LOGIN_CLIENT_MAX_FAILURES,
    clientWindowMs: ms(config.LOGIN_CLIENT_FAILURE_WINDOW)
  }
  const redis = fastify.redis
  const maxWaiting = config.LOGIN_SLOT_QUEUE_MAX
  const protection = redis === undefined
    ? new LoginProtection(new MemoryLoginAttempts(policy), { maxWaiting })
    : new LoginProtection(new RedisLoginAttempts(redis.client, config.REDIS_KEY_PREFIX, policy), { status: redis.status, maxWaiting })
  fastify.decorate('loginProtection', protection)
}, { name: 'login-protection', dependencies: ['config', 'dependencies', 'redis'] })
