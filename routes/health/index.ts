import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'

const Liveness = Type.Object({ status: Type.Literal('ok') })
const Readiness = Type.Object({ ready: Type.Boolean(), reason: Type.Optional(Type.String()) })

// Health checks answer even under pressure: they report it instead of being shed.
const notShed = { pressureHandler: () => undefined }

const health: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    config: notShed,
    schema: { tags: ['health'], summary: 'Liveness: the process is up', response: { 200: Liveness } }
  }, async () => ({ status: 'ok' as const }))

  fastify.get('/ready', {
    // readiness: answered 503 by the standalone server once shutdown has started.
    config: { ...notShed, readiness: true },
    schema: {
      tags: ['health'],
      summary: 'Readiness: false while overloaded, or while the database or Redis (when configured) cannot be used; the reason names them',
      response: { 200: Readiness, 503: Readiness }
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
