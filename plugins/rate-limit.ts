import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'

/** Makes `fastify.createRateLimit()` available; routes choose their own limits (see routes/auth). */
export default fp(async (fastify) => {
  await fastify.register(rateLimit, { global: false })
}, { name: 'rate-limit' })
