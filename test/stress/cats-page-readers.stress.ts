import { request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { pausedReader, startFilledServer, statusLineOf } from '../support/filled-server.js'

// 30 clients that send GET /cats?limit=1000 and never read, at 1,000 cats of about 8 KB (a page of 8 MB), must keep
// the server's RSS within 100 MB of its idle size: a page streams in chunks like a whole list. Built whole, each
// answer was the page's 8 MB, held until the connection timed out (measured: 174 → 812 MiB). Once with the cap on
// streams raised to 30, so that every reader is streamed to and only the chunks bound the memory, once with the
// default cap, past which readers get a 503 at once; on memory and, when TEST_DATABASE_URL is set, on PostgreSQL.

const READERS = 30
const CATS = 1000
const PAGE = `/cats?limit=${CATS}`
const MiB = 2 ** 20

/** GET `path` read to its end: its status and the body's size. */
const read = (port: number, path: string): Promise<{ status: number, bytes: number }> => new Promise((resolve, reject) => {
  request({ host: '127.0.0.1', port, path, agent: false }, (response) => {
    let bytes = 0
    response.on('data', (chunk: Buffer) => { bytes += chunk.length })
    response.on('end', () => resolve({ status: response.statusCode ?? 0, bytes }))
  }).on('error', reject).end()
})

const stores = [['memory', undefined], ['PostgreSQL', process.env.TEST_DATABASE_URL]] as const
for (const [store, databaseUrl] of stores) {
  for (const [cap, streamed] of [[String(READERS), READERS], [undefined, 8]] as const) {
    const name = `${READERS} paused readers of ${PAGE} over ${CATS} cats of 8 KB (${store}, ${cap === undefined ? 'the default cap' : `LIST_STREAMS_MAX=${cap}`}): RSS within 100 MB of idle`
    t.test(name, { skip: databaseUrl === undefined && store !== 'memory' ? 'TEST_DATABASE_URL is not set' : false }, async (t) => {
      const server = await startFilledServer(t, { cats: CATS, largeCats: CATS, databaseUrl, env: cap === undefined ? {} : { LIST_STREAMS_MAX: cap } })
      // Idle is measured after one page read whole, so that what a first page allocates once is in it.
      const page = await read(server.port, PAGE)
      t.equal(page.status, 200)
      t.ok(page.bytes > 8_000_000, `the page is ${(page.bytes / 1e6).toFixed(1)} MB`)
      await sleep(1000)
      const idle = server.rss()

      const readers = await Promise.all(Array.from({ length: READERS }, () => pausedReader(server.port, PAGE)))
      let peak = idle
      for (let sample = 0; sample < 20; sample++) {
        await sleep(250)
        peak = Math.max(peak, server.rss())
      }
      t.comment(`${store}: RSS idle ${(idle / MiB).toFixed(0)} MiB; with ${READERS} paused page readers up to ${(peak / MiB).toFixed(0)} MiB (+${((peak - idle) / MiB).toFixed(1)} MiB)`)
      t.ok(peak - idle < 100 * MiB, `RSS grew by ${((peak - idle) / MiB).toFixed(1)} MiB, under 100 MiB`)

      const statusLines = await Promise.all(readers.map((reader) => statusLineOf(reader)))
      const count = (line: string): number => statusLines.filter((seen) => seen === line).length
      t.equal(count('HTTP/1.1 200 OK'), streamed, `${streamed} readers were being sent their page`)
      t.equal(count('HTTP/1.1 503 Service Unavailable'), READERS - streamed, 'the others were refused')
    })
  }
}
