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
    config: notShed,
    schema: {
      tags: ['health'],
      summary: 'Readiness: false while overloaded or the database is unreachable (while shutting down, every request gets 503)',
      response: { 200: Readiness, 503: Readiness }
    }
  }, async (_request, reply) => {
    const reason = fastify.isUnderPressure() ? 'overloaded' : await fastify.catsStore.isReady() ? undefined : 'database unavailable'
    if (reason === undefined) return { ready: true }
    reply.code(503)
    return { ready: false, reason }
  })
}

export default health
