import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NO_SECURITY } from '../../src/http/schemas.js'
import { READINESS_CACHE_MS, coalescedProbe } from '../../src/readiness.js'
import { serviceDecorator } from '../../src/service-scope.js'

const Liveness = Type.Object({ status: Type.Literal('ok') }, { description: 'The process is up' })
const Readiness = Type.Object({
  ready: Type.Boolean(),
  reason: Type.Optional(Type.String({ description: 'Why the service is not ready', examples: ['database unavailable'] }))
})

// Health checks answer even under pressure: they report it instead of being shed.
const notShed = { pressureHandler: () => undefined }
// Read by the standalone server's shutdown (src/http/graceful-shutdown.ts); a name of the route's own config, not
// one added to Fastify's shared types.
const readinessConfig = { ...notShed, readiness: true }

const health: FastifyPluginAsyncTypebox = async (fastify) => {
  const dependencies = serviceDecorator(fastify, 'catsDependencies')
  // The names of the dependencies that did not answer their probe (each has its own short timeout, so
  // readiness answers even when one is silent). Shared and reused for a second: readiness is public, and
  // a probe per request would let anyone send the database and Redis a query per request they send.
  const unavailableDependencies = coalescedProbe(async () => {
    const checks = await Promise.all([...dependencies.values()].map(async (dependency) => ({ dependency, ok: await dependency.check() })))
    return checks.filter((check) => !check.ok).map((check) => check.dependency.name)
  }, READINESS_CACHE_MS)

  fastify.get('', {
    config: notShed,
    schema: { tags: ['health'], operationId: 'getHealth', summary: 'Liveness: the process is up', security: NO_SECURITY, response: { 200: Liveness } }
  }, async () => ({ status: 'ok' as const }))

  fastify.get('/ready', {
    // readiness: answered 503 by the standalone server once shutdown has started.
    config: readinessConfig,
    schema: {
      tags: ['health'],
      operationId: 'getReadiness',
      summary: 'Readiness: false while overloaded, shutting down, or while the database or Redis (when configured) cannot be used; the reason names them',
      security: NO_SECURITY,
      response: {
        200: Type.Object(Readiness.properties, { description: 'Ready to serve' }),
        503: Type.Object(Readiness.properties, { description: 'Not ready: overloaded, shutting down, or the database or Redis cannot be used' })
      }
    }
  }, async (_request, reply) => {
    if (fastify.isUnderPressure()) {
      reply.code(503)
      return { ready: false, reason: 'overloaded' }
    }
    const unavailable = await unavailableDependencies()
    if (unavailable.length === 0) return { ready: true }
    const reason = `${unavailable.join(' and ')} unavailable`
    reply.code(503)
    return { ready: false, reason }
  })
}

export default health
