import fp from 'fastify-plugin'
import { connectRedis, connectRedisCluster } from '../../src/redis-connection.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** The Redis of REDIS_URL, or the Redis Cluster of REDIS_CLUSTER_NODES: a dependency named `redis` that readiness probes. */
export default fp(async (fastify) => {
  const { REDIS_URL, REDIS_CLUSTER_NODES } = serviceDecorator(fastify, 'catsConfig')
  // Never both: loadConfig refuses that.
  const redis = REDIS_CLUSTER_NODES !== undefined
    ? await connectRedisCluster(REDIS_CLUSTER_NODES, fastify.log)
    : REDIS_URL !== undefined ? await connectRedis(REDIS_URL, fastify.log) : undefined
  if (redis === undefined) {
    decorateService(fastify, 'catsRedis', undefined)
    return
  }
  serviceDecorator(fastify, 'catsDependencies').set(redis.status.name, redis.status)
  fastify.addHook('onClose', async () => { redis.client.disconnect() })
  decorateService(fastify, 'catsRedis', redis)
}, { name: 'redis', dependencies: ['dependencies'] })
