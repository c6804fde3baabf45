import type { FastifyPluginAsync } from 'fastify'
import { collectDefaultMetrics, type Registry } from 'prom-client'

/**
 * Serves a registry as Prometheus text at `GET /metrics`, with the process's
 * default metrics (CPU, heap, event loop lag, GC) added to it. The standalone
 * server registers it at the root, outside the service plugin: never behind a
 * prefix, not in the OpenAPI document, and scrapes are not counted as requests.
 */
export const metricsEndpoint: FastifyPluginAsync<{ registry: Registry }> = async (fastify, { registry }) => {
  collectDefaultMetrics({ register: registry })
  fastify.get('/metrics', async (_request, reply) => {
    reply.type(registry.contentType)
    return registry.metrics()
  })
}
