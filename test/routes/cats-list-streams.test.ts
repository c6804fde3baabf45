import type { AddressInfo, Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../support/app.js'
import { stalledReader } from '../support/filled-server.js'
import type { ConfigInput } from '../../src/config.js'
import { encodeCursor } from '../../src/cats/list-paging.js'

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
async function stalledReaders (t: Test, port: number, count: number, path = '/cats'): Promise<Socket[]> {
  const readers = await Promise.all(Array.from({ length: count }, () => stalledReader(port, path)))
  t.teardown(() => { for (const { socket } of readers) socket.destroy() })
  t.strictSame(readers.map(({ statusLine }) => statusLine), readers.map(() => 'HTTP/1.1 200 OK'), `${count} lists streaming`)
  return readers.map(({ socket }) => socket)
}

for (const [streams, config, path] of [[8, {}, '/cats'], [5, { LIST_STREAMS_MAX: 5 }, '/cats'], [5, { LIST_STREAMS_MAX: 5 }, '/cats?limit=1000']] as const) {
  t.test(`past ${streams} lists streaming at once (${path}), another one is a 503 with Retry-After; pages are counted alike`, async (t) => {
    const { app, port } = await listening(t, config)
    const readers = await stalledReaders(t, port, streams, path)

    const refused = await app.inject('/cats')
    t.equal(refused.statusCode, 503)
    t.equal(refused.headers['retry-after'], '2')
    t.match(refused.json(), { statusCode: 503, error: 'Service Unavailable', code: 'CATS_ERR_TOO_MANY_LISTS' })
    t.match(refused.json().message, /Too many lists/)

    for (const query of ['limit=10', 'limit=1000', `after=${encodeCursor(1)}`]) {
      const page = await app.inject(`/cats?${query}`)
      t.equal(page.statusCode, 503, `a page of more than one chunk streams, and is refused alike (${query})`)
      t.equal(page.json().code, 'CATS_ERR_TOO_MANY_LISTS')
    }
    const page = await app.inject('/cats?limit=5')
    t.equal(page.statusCode, 200, 'a page that fits one chunk (5 cats of 8 KB) is sent at once, as before')
    t.equal(page.json().length, 5)
    t.match(page.headers.link, /^<\/cats\?limit=5&after=[A-Za-z0-9_-]+>; rel="next"$/)

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

for (const path of ['/cats', '/cats?limit=1000']) {
  t.test(`a reader that stops reading has its list cut off after LIST_WRITE_TIMEOUT_MS (${path})`, async (t) => {
    const { app, port } = await listening(t, { LIST_WRITE_TIMEOUT_MS: 500 })
    const [reader] = await stalledReaders(t, port, 1, path)
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
    t.ok(received.length < 8_000_000, `${received.length} bytes of a list of at least 8 MB`)
  })
}
