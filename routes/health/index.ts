import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NO_SECURITY } from '../../src/http/schemas.js'

const Liveness = Type.Object({ status: Type.Literal('ok') }, { description: 'The process is up' })
const Readiness = Type.Object({
  ready: Type.Boolean(),
  reason: Type.Optional(Type.String({ description: 'Why the service is not ready', examples: ['database unavailable'] }))
})

// Health checks answer even under pressure: they report it instead of being shed.
const notShed = { pressureHandler: () => undefined }

const health: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    config: notShed,
    schema: { tags: ['health'], operationId: 'getHealth', summary: 'Liveness: the process is up', security: NO_SECURITY, response: { 200: Liveness } }
  }, async () => ({ status: 'ok' as const }))

  fastify.get('/ready', {
    // readiness: answered 503 by the standalone server once shutdown has started.
    config: { ...notShed, readiness: true },
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
    // Each probe has its own short timeout, so readiness answers even when a dependency is silent.
    const checks = await Promise.all([...fastify.dependencies.values()].map(async (dependency) => ({ dependency, ok: await dependency.check() })))
    const unavailable = checks.filter((check) => !check.ok).map((check) => check.dependency.name)
    if (unavailable.length === 0) return { ready: true }
    const reason = `${unavailable.join(' and ')} unavailable`
    reply.code(503)
    return { ready: false, reason }
  })
}

export default health
