import { Server as NetServer, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'

/** Whether a route's config marks it as readiness (`config: { readiness: true }`, routes/health): answered 503 once shutdown starts. */
function isReadinessRoute (config: object): boolean {
  return 'readiness' in config && config.readiness === true
}

/**
 * A shutdown that resets no connection while a request may be on its way.
 *
 * Fastify's close() (through Node's server.close()) closes idle keep-alive
 * connections at once; a request the client sent just before is then answered
 * by a reset, and the client cannot know whether it was served. Instead, once
 * shutdown starts: no new connections are accepted; every response carries
 * `Connection: close`, so a busy connection ends cleanly after its next
 * response; an idle one is closed by the keep-alive timeout the client was
 * told about (the normal idle close). When no connection is left, or after
 * `timeoutMs`, the app is closed (stores, Redis).
 *
 * Call before the app is registered (the hook must reach its routes) and before listen.
 */
export function drainingShutdown (fastify: FastifyInstance, timeoutMs: number): () => Promise<void> {
  const sockets = new Set<Socket>()
  let draining = false
  let allClosed: (() => void) | undefined
  fastify.server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => {
      sockets.delete(socket)
      if (sockets.size === 0) allClosed?.()
    })
  })
  // A callback hook, not an async one: it runs on every request, and a promise each time would cost more than the check.
  fastify.addHook('onRequest', (request, reply, done) => {
    if (!draining) {
      done()
      return
    }
    reply.header('connection', 'close')
    if (isReadinessRoute(request.routeOptions.config)) reply.code(503).send({ ready: false, reason: 'shutting down' })
    else done()
  })

  return async function shutdown (): Promise<void> {
    draining = true
    // The net.Server close: stops listening without closing idle connections (http.Server's close would).
    NetServer.prototype.close.call(fastify.server)
    if (sockets.size > 0) {
      let timer: NodeJS.Timeout | undefined
      await new Promise<void>((resolve) => {
        allClosed = resolve
        timer = setTimeout(resolve, timeoutMs)
      })
      clearTimeout(timer)
    }
    if (sockets.size > 0) {
      fastify.log.warn({ connections: sockets.size }, 'drain time is over: closing the remaining connections')
      for (const socket of sockets) socket.destroy()
    }
    await fastify.close()
  }
}
