import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { pausedReader, readWholeList, startFilledServer, statusLineOf } from '../support/filled-server.js'

// 50 clients that send GET /cats and never read, at 100,000 cats whose first 2,000 are about 8 KB (so a page
// of 1,000 cats would be 8 MB), must keep the server's RSS within 100 MB of its idle size: once with the cap
// on streams raised to 50, so that every reader is streamed to and only the chunks bound the memory, and once
// with the default cap, past which readers get a 503 at once.

const READERS = 50
const MiB = 2 ** 20

for (const [cap, streamed] of [['50', READERS], [undefined, 8]] as const) {
  t.test(`${READERS} paused readers at 100,000 cats, ${cap === undefined ? 'the default cap' : `LIST_STREAMS_MAX=${cap}`}: RSS within 100 MB of idle`, async (t) => {
    const server = await startFilledServer(t, { cats: 100_000, largeCats: 2000, env: cap === undefined ? {} : { LIST_STREAMS_MAX: cap } })
    t.equal((await readWholeList(server.port)).status, 200)
    await sleep(1000)
    const idle = server.rss()

    const readers = await Promise.all(Array.from({ length: READERS }, () => pausedReader(server.port)))
    let peak = idle
    for (let sample = 0; sample < 20; sample++) {
      await sleep(250)
      peak = Math.max(peak, server.rss())
    }
    t.comment(`RSS idle ${(idle / MiB).toFixed(0)} MiB; with ${READERS} paused readers up to ${(peak / MiB).toFixed(0)} MiB (+${((peak - idle) / MiB).toFixed(1)} MiB)`)
    t.ok(peak - idle < 100 * MiB, `RSS grew by ${((peak - idle) / MiB).toFixed(1)} MiB, under 100 MiB`)

    const statusLines = await Promise.all(readers.map((reader) => statusLineOf(reader)))
    const count = (line: string): number => statusLines.filter((seen) => seen === line).length
    t.equal(count('HTTP/1.1 200 OK'), streamed, `${streamed} readers were being sent their list`)
    t.equal(count('HTTP/1.1 503 Service Unavailable'), READERS - streamed, 'the others were refused')
  })
}
