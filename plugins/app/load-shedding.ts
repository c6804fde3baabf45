import fp from 'fastify-plugin'
import underPressure from '@fastify/under-pressure'
import { Overloaded, retryAfterFor } from '../../src/errors.js'
import { serviceDecorator } from '../../src/service-scope.js'

/**
 * Sheds load with 503 + Retry-After when the event loop lags or the heap grows past the limits. Registered after
 * the plugins that open the stores: opening PGlite or waiting for Redis holds the loop, and a sample taken
 * meanwhile would shed the first requests after start.
 */
export default fp(async (fastify) => {
  const { MAX_EVENT_LOOP_DELAY_MS, MAX_HEAP_USED_BYTES } = serviceDecorator(fastify, 'catsConfig')
  const overloaded = new Overloaded()
  await fastify.register(underPressure, {
    maxEventLoopDelay: MAX_EVENT_LOOP_DELAY_MS,
    maxHeapUsedBytes: MAX_HEAP_USED_BYTES,
    // A shed request ends with this error, which the service's error handler answers like any other (in the shape
    // the client asks for); the route never runs.
    customError: Overloaded,
    retryAfter: retryAfterFor(overloaded.code)
  })
}, { name: 'load-shedding', dependencies: ['database', 'redis', 'cats-store', 'sessions', 'users', 'login-protection'] })
