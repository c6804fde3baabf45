import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import Fastify from 'fastify'
import { drainingShutdown } from '../../src/http/graceful-shutdown.js'
import { startServer } from '../support/server.js'

// SIGTERM under keep-alive load: every request sent gets a whole response (a 2xx, or a 503
// with Connection: close), no connection is reset with a request outstanding, exit code 0.

interface Tally { ok: number, closing: number, refused: number, resets: number, other: string[] }

/**
 * One client: a keep-alive connection sending requests back to back; after a
 * `Connection: close` answer it opens a new one, until the server refuses.
 */
async function keepAliveClient (port: number, tally: Tally, until: () => boolean): Promise<void> {
  while (!until()) {
    const socket = connect(port, '127.0.0.1')
    const outcome = await new Promise<'refused' | 'closed'>((resolve) => {
      let buffer = ''
      let outstanding = false
      const send = (): void => {
        outstanding = true
        socket.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n')
      }
      socket.on('connect', send)
      socket.on('data', (chunk) => {
        buffer += String(chunk)
        const end = buffer.indexOf('\r\n\r\n')
        if (end === -1) return
        const head = buffer.slice(0, end).toLowerCase()
        const length = Number(/content-length: (\d+)/.exec(head)?.[1] ?? 0)
        if (buffer.length < end + 4 + length) return
        buffer = buffer.slice(end + 4 + length)
        outstanding = false
        const status = Number(head.slice(9, 12))
        const closing = head.includes('connection: close')
        if (status >= 200 && status < 300) tally.ok++
        else if (status !== 503 || !closing) tally.other.push(head.split('\r\n')[0])
        if (closing) tally.closing++
        else if (!until()) send()
        else socket.end()
      })
      socket.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'ECONNREFUSED') resolve('refused')
        else if (outstanding) tally.resets++
      })
      socket.on('close', () => {
        if (outstanding) tally.resets++
        resolve('closed')
      })
    })
    if (outcome === 'refused') {
      tally.refused++
      return
    }
  }
}

const CLIENTS = 8

t.test('SIGTERM under keep-alive load: no reset, every answer whole, exit 0 within the drain time', async (t) => {
  const { child, base } = await startServer({ KEEP_ALIVE_TIMEOUT_MS: '2000' })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const exited = once(child, 'exit')
  const port = Number(new URL(base).port)

  // One more connection, used once before the signal and then left idle: closed by the keep-alive timeout.
  const idle = connect(port, '127.0.0.1')
  idle.on('error', () => {})
  idle.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n')
  await once(idle, 'data')

  const tally: Tally = { ok: 0, closing: 0, refused: 0, resets: 0, other: [] }
  let stopped = false
  const clients = Promise.all(Array.from({ length: CLIENTS }, async () => keepAliveClient(port, tally, () => stopped)))
  await sleep(500)
  const before = tally.ok
  const signalled = Date.now()
  child.kill('SIGTERM')
  const [code] = await exited
  const drainMs = Date.now() - signalled
  stopped = true
  await clients
  t.comment(`${before} answers before SIGTERM, ${tally.ok - before} after; ${tally.closing} with Connection: close; resets: ${tally.resets}; refused: ${tally.refused}; exit after ${drainMs} ms`)
  t.ok(before > 0, 'requests were served before the signal')
  t.equal(tally.resets, 0, 'no connection was reset or closed with a request outstanding')
  t.strictSame(tally.other, [], 'every answer was a 2xx, or a 503 with Connection: close')
  t.equal(tally.closing, CLIENTS, 'each busy connection was told Connection: close once')
  t.equal(tally.refused, CLIENTS, 'new connections were refused after the signal')
  t.equal(code, 0, 'exit code 0')
  t.ok(drainMs < 2000 + 3000, 'the idle keep-alive connection kept the drain to about its keep-alive timeout')
  t.ok(idle.destroyed || idle.readableEnded, 'the idle connection was closed by the server')
})

t.test('drainingShutdown: closes at once without connections, and cuts what is left after the drain time', async (t) => {
  const app = Fastify()
  const shutdown = drainingShutdown(app, 300)
  app.get('/', async () => 'ok')
  app.get('/ready', { config: { readiness: true } }, async () => ({ ready: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  // A connection that comes and goes before the signal.
  const early = connect(port, '127.0.0.1')
  early.resume()
  early.end('GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')
  await once(early, 'close')
  const probe: Socket = connect(port, '127.0.0.1')
  probe.on('error', () => {})
  await once(probe, 'connect')
  const busy: Socket = connect(port, '127.0.0.1')
  busy.on('error', () => {})
  await once(busy, 'connect')
  const socket: Socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n')
  await once(socket, 'data')
  const socketClosed = once(socket, 'close')
  const started = Date.now()
  const closing = shutdown()
  probe.write('GET /ready HTTP/1.1\r\nhost: x\r\n\r\n')
  const [answer] = await once(probe, 'data')
  t.match(String(answer), /^HTTP\/1\.1 503[^]*connection: close[^]*"reason":"shutting down"/i, 'readiness on an open connection: 503 with Connection: close')
  busy.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n')
  const [served] = await once(busy, 'data')
  t.match(String(served), /^HTTP\/1\.1 200[^]*connection: close[^]*\r\n\r\nok$/i, 'another route on an open connection: served, with Connection: close')
  await closing
  t.ok(Date.now() - started >= 290, 'waited for the drain time')
  await socketClosed
  t.pass('the idle connection was closed after the drain time')

  const empty = Fastify()
  const closeEmpty = drainingShutdown(empty, 10_000)
  await empty.listen({ port: 0, host: '127.0.0.1' })
  const begun = Date.now()
  await closeEmpty()
  t.ok(Date.now() - begun < 1000, 'no connection: closes at once')
})
