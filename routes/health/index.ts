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
    config: notShed,
    schema: {
      tags: ['health'],
      operationId: 'getReadiness',
      summary: 'Readiness: false while overloaded or the database is unreachable (while shutting down, every request gets 503)',
      security: NO_SECURITY,
      response: {
        200: Type.Object(Readiness.properties, { description: 'Ready to serve' }),
        503: Type.Object(Readiness.properties, { description: 'Not ready: overloaded, the database is unreachable, or shutting down' })
      }
    }
  }, async (_request, reply) => {
    const reason = fastify.isUnderPressure() ? 'overloaded' : await fastify.catsStore.isReady() ? undefined : 'database unavailable'
    if (reason === undefined) return { ready: true }
    reply.code(503)
    return { ready: false, reason }
  })
}

export default health
