import fp from 'fastify-plugin'
import type { AppOptions } from '../../src/app-options.js'
import { importOptionalPeer } from '../../src/optional-peer.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/**
 * Prometheus metrics on the registry the app is given (`metrics.registry`), or
 * none at all: without one no hook is added, so requests do no extra work.
 * Serving the registry is the owner's part (src/server.ts, or the host app).
 */
export default fp<AppOptions>(async (fastify, opts) => {
  const registry = opts.metrics?.registry
  if (registry === undefined) {
    decorateService(fastify, 'catsMetrics', undefined)
    return
  }
  // Loaded only here: prom-client, an optional peer, is a large module graph that a service without metrics never needs.
  const { ServiceMetrics } = await importOptionalPeer('prom-client', 'the metrics option is given', () => import('../../src/metrics/service-metrics.js'))
  // Read at scrape time: the store is decorated by its own plugin, after this one.
  const metrics = new ServiceMetrics(registry, { countCats: () => serviceDecorator(fastify, 'catsStore').count() })
  decorateService(fastify, 'catsMetrics', metrics)
  fastify.addHook('onResponse', metrics.observeResponse)
  fastify.addHook('onError', (_request, _reply, error, done) => {
    metrics.countError(error)
    done()
  })
}, { name: 'metrics' })
