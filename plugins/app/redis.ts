import fp from 'fastify-plugin'
import { connectRedis, connectRedisCluster } from '../../src/redis-connection.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** The Redis of REDIS_URL, or the Redis Cluster of REDIS_CLUSTER_NODES: a dependency named `redis` that readiness probes. */
export default fp(async (fastify) => {
  const { REDIS_URL, REDIS_CLUSTER_NODES, REDIS_WAIT_REPLICAS } = serviceDecorator(fastify, 'catsConfig')
  // Never both: loadConfig refuses that.
  const redis = REDIS_CLUSTER_NODES !== undefined
    ? await connectRedisCluster(REDIS_CLUSTER_NODES, fastify.log, REDIS_WAIT_REPLICAS)
    : REDIS_URL !== undefined ? await connectRedis(REDIS_URL, fastify.log, REDIS_WAIT_REPLICAS) : undefined
  if (redis === undefined) {
    decorateService(fastify, 'catsRedis', undefined)
    return
  }
  serviceDecorator(fastify, 'catsDependencies').set(redis.status.name, redis.status)
  fastify.addHook('onClose', async () => {
    redis.client.disconnect()
    redis.acknowledged?.close()
  })
  decorateService(fastify, 'catsRedis', redis)
}, { name: 'redis', dependencies: ['dependencies'] })
