import fp from 'fastify-plugin'
import { connectRedis } from '../../src/redis-connection.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** The Redis of REDIS_URL, a dependency named `redis` that readiness probes. */
export default fp(async (fastify) => {
  const { REDIS_URL } = serviceDecorator(fastify, 'catsConfig')
  if (REDIS_URL === undefined) {
    decorateService(fastify, 'catsRedis', undefined)
    return
  }
  const redis = await connectRedis(REDIS_URL, fastify.log)
  serviceDecorator(fastify, 'catsDependencies').set(redis.status.name, redis.status)
  fastify.addHook('onClose', async () => { redis.client.disconnect() })
  decorateService(fastify, 'catsRedis', redis)
}, { name: 'redis', dependencies: ['dependencies'] })
