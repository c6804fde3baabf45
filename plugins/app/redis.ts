import fp from 'fastify-plugin'
import { connectRedis, type RedisConnection } from '../../src/redis-connection.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Redis when REDIS_URL is set (login counters, the denylist, sessions without a database); undefined otherwise. */
    redis: RedisConnection | undefined
  }
}

/** The Redis of REDIS_URL, a dependency named `redis` that readiness probes. */
export default fp(async (fastify) => {
  const { REDIS_URL } = fastify.config
  if (REDIS_URL === undefined) {
    fastify.decorate('redis', undefined)
    return
  }
  const redis = await connectRedis(REDIS_URL, fastify.log)
  fastify.dependencies.set(redis.status.name, redis.status)
  fastify.addHook('onClose', async () => { redis.client.disconnect() })
  fastify.decorate('redis', redis)
}, { name: 'redis', dependencies: ['dependencies'] })
