import fp from 'fastify-plugin'

/** Echoes the request id (see src/server-options.ts) so clients can quote it. */
export default fp(async (fastify) => {
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
}, { name: 'request-id' })
