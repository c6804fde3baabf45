import type { AddressInfo, Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../support/app.js'
import { stalledReader } from '../support/filled-server.js'
import type { ConfigInput } from '../../src/config.js'

/**
 * A listening app with 2,500 cats of about 8 KB (a 20 MB list, far more than the kernel buffers a reader
 * that stops reading), so a whole list streamed to such a reader stays open until something ends it.
 */
async function listening (t: Test, config: Partial<ConfigInput> = {}): Promise<{ app: FastifyInstance, port: number }> {
  const app = await build(t, { CATS_MAX: 3000, ...config })
  const name = 'x'.repeat(8000)
  for (let index = 0; index < 2500; index++) await app.catsStore.createJson({ name, age: index % 30, breed: 'Siamese' })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, port: (app.server.address() as AddressInfo).port }
}

/** Readers whose lists have begun to stream and that then stopped reading, destroyed on teardown. */
async function stalledReaders (t: Test, port: number, count: number): Promise<Socket[]> {
  const readers = await Promise.all(Array.from({ length: count }, () => stalledReader(port)))
  t.teardown(() => { for (const { socket } of readers) socket.destroy() })
  t.strictSame(readers.map(({ statusLine }) => statusLine), readers.map(() => 'HTTP/1.1 200 OK'), `${count} lists streaming`)
  return readers.map(({ socket }) => socket)
}

for (const [streams, config] of [[8, {}], [5, { LIST_STREAMS_MAX: 5 }]] as const) {
  t.test(`past ${streams} whole lists streaming at once, another one is a 503 with Retry-After; pages are not counted`, async (t) => {
    const { app, port } = await listening(t, config)
    const readers = await stalledReaders(t, port, streams)

    const refused = await app.inject('/cats')
    t.equal(refused.statusCode, 503)
    t.equal(refused.headers['retry-after'], '2')
    t.match(refused.json(), { statusCode: 503, error: 'Service Unavailable', code: 'CATS_ERR_TOO_MANY_LISTS' })
    t.match(refused.json().message, /whole lists/)

    const page = await app.inject('/cats?limit=10')
    t.equal(page.statusCode, 200, 'a page with limit is no whole list')
    t.equal(page.json().length, 10)

    readers[0].destroy()
    // Its place is free once the server has seen the connection close.
    let served = await app.inject('/cats')
    for (let tries = 0; served.statusCode === 503 && tries < 100; tries++) {
      await sleep(20)
      served = await app.inject('/cats')
    }
    t.equal(served.statusCode, 200, 'a place is free again once a reader is gone')
    t.equal(served.json().length, 2500)
  })
}

t.test('a reader that stops reading has its whole list cut off after LIST_WRITE_TIMEOUT_MS', async (t) => {
  const { app, port } = await listening(t, { LIST_WRITE_TIMEOUT_MS: 500 })
  const [reader] = await stalledReaders(t, port, 1)
  // The reader's is the server's only connection: it is cut once the server has none.
  const connections = (): Promise<number> => new Promise((resolve, reject) => {
    app.server.getConnections((error, count) => { if (error === null) resolve(count); else reject(error) })
  })
  const stalled = Date.now()
  for (let waited = 0; waited < 5000 && await connections() > 0; waited += 20) await sleep(20)
  t.comment(`the server closed the connection ${Date.now() - stalled} ms after the reader stopped reading`)
  // Reading again, the client gets what the socket held, then the end of a connection cut short.
  let received = ''
  const closed = new Promise<void>((resolve) => reader.once('close', () => resolve()))
  reader.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
  reader.resume()
  // An unref'd cap: a timer left pending would keep the process alive for its 5 s after the tests.
  await Promise.race([closed, sleep(5000, undefined, { ref: false })])
  t.equal(reader.destroyed, true, 'the server closed the connection')
  t.notOk(received.endsWith('\r\n0\r\n\r\n'), 'before the end of the list')
  t.ok(received.length < 20_000_000, `${received.length} bytes of a list of 20 MB`)
})
