import fp from 'fastify-plugin'
import underPressure from '@fastify/under-pressure'
import type { FastifyReply } from 'fastify'
import { errorBody } from '../../src/http/error-body.js'
import { Overloaded, retryAfterFor } from '../../src/errors.js'

/**
 * Sheds load with 503 + Retry-After when the event loop lags or the heap grows past the limits. Registered after
 * the plugins that open the stores: opening PGlite or waiting for Redis holds the loop, and a sample taken
 * meanwhile would shed the first requests after start.
 */
export default fp(async (fastify) => {
  const { MAX_EVENT_LOOP_DELAY_MS, MAX_HEAP_USED_BYTES } = fastify.config
  await fastify.register(underPressure, {
    maxEventLoopDelay: MAX_EVENT_LOOP_DELAY_MS,
    maxHeapUsedBytes: MAX_HEAP_USED_BYTES,
    pressureHandler: (_request, reply: FastifyReply) => {
      const error = new Overloaded()
      reply.code(error.statusCode).header('retry-after', String(retryAfterFor(error.code))).send(errorBody(error))
    }
  })
}, { name: 'load-shedding', dependencies: ['database', 'redis', 'cats-store', 'sessions', 'users', 'login-protection'] })
