import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'

/**
 * Makes `fastify.createRateLimit()` available; routes choose their own limits
 * (see routes/auth). With REDIS_URL the counters live in Redis, shared by every instance.
 */
export default fp(async (fastify) => {
  const { REDIS_URL } = fastify.config
  if (REDIS_URL === undefined) {
    await fastify.register(rateLimit, { global: false })
    return
  }
  const { Redis } = await import('ioredis')
  // Fail fast instead of queueing commands while Redis is away: the login answers 503, never hangs.
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000 })
  redis.on('error', (error) => fastify.log.warn({ err: error }, 'redis connection error'))
  fastify.addHook('onClose', async () => {
    redis.disconnect()
  })
  await fastify.register(rateLimit, { global: false, redis, nameSpace: 'cats-api-rate-limit-' })
}, { name: 'rate-limit', dependencies: ['config'] })
