import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import { DependencyStatus } from '../src/dependency-status.js'

/** How long one Redis command may take before the login answers 503. */
const REDIS_COMMAND_TIMEOUT_MS = 1000

/**
 * Makes `fastify.createRateLimit()` available; routes choose their own limits
 * (see routes/auth). With REDIS_URL the counters live in Redis, shared by every
 * instance, and Redis is a dependency named `redis` (readiness, outage log).
 */
export default fp(async (fastify) => {
  const { REDIS_URL } = fastify.config
  if (REDIS_URL === undefined) {
    await fastify.register(rateLimit, { global: false })
    return
  }
  const { Redis } = await import('ioredis')
  // Fail fast instead of waiting: no queueing while Redis is away, and a Redis that accepts
  // connections but never answers times out; the login then answers 503 within seconds.
  const redis = new Redis(REDIS_URL, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS
  })
  const status = new DependencyStatus('redis', fastify.log, () => redis.ping())
  fastify.dependencies.set(status.name, status)
  // Reconnection attempts fail again and again during an outage: the status logs the first failure only.
  redis.on('error', (error) => status.failed(error))
  redis.on('ready', () => status.succeeded())
  fastify.addHook('onClose', async () => {
    redis.disconnect()
  })
  await fastify.register(rateLimit, { global: false, redis, nameSpace: 'cats-api-rate-limit-' })
}, { name: 'rate-limit', dependencies: ['config', 'dependencies'] })
