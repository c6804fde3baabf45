import fp from 'fastify-plugin'
import underPressure from '@fastify/under-pressure'
import type { FastifyReply } from 'fastify'
import { simpleErrorBody } from '../src/http/error-handler.js'

const RETRY_AFTER_SECONDS = 10

/** Sheds load with 503 + Retry-After when the event loop lags or the heap grows past the limits. */
export default fp(async (fastify) => {
  const { MAX_EVENT_LOOP_DELAY_MS, MAX_HEAP_USED_BYTES } = fastify.config
  await fastify.register(underPressure, {
    maxEventLoopDelay: MAX_EVENT_LOOP_DELAY_MS,
    maxHeapUsedBytes: MAX_HEAP_USED_BYTES,
    pressureHandler: (_request, reply: FastifyReply) => {
      reply.code(503).header('retry-after', String(RETRY_AFTER_SECONDS))
        .send(simpleErrorBody(503, 'The server is overloaded; retry shortly'))
    }
  })
}, { name: 'under-pressure', dependencies: ['config'] })
