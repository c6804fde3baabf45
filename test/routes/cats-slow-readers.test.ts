import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { pausedReader, readWholeList, startFilledServer, statusLineOf } from '../support/filled-server.js'

const READERS = 20
const MiB = 2 ** 20

/**
 * Readers that stop reading pin a few chunks each, not their lists. The first 2,000 of the 3,000 cats are about
 * 8 KB, so a page of 1,000 cats would be 8 MB: a stream that cut its list by cats alone held two of them per
 * reader (about 580 MB more for these 20). The cap on streams is raised to the number of readers, so that
 * every reader is streamed to and the bound comes from the chunks alone. The heavier run (50 readers,
 * 100,000 cats) is test/stress/cats-slow-readers.stress.ts.
 */
t.test(`${READERS} readers that stop reading keep the server within 100 MB of its idle size`, async (t) => {
  const server = await startFilledServer(t, { cats: 3000, largeCats: 2000, env: { LIST_STREAMS_MAX: String(READERS) } })
  // Idle is measured after one whole list, so that what any first list allocates once is in it.
  t.equal((await readWholeList(server.port)).status, 200)
  await sleep(1000)
  const idle = server.rss()

  const readers = await Promise.all(Array.from({ length: READERS }, () => pausedReader(server.port)))
  let peak = idle
  for (let sample = 0; sample < 12; sample++) {
    await sleep(250)
    peak = Math.max(peak, server.rss())
  }
  t.comment(`RSS idle ${(idle / MiB).toFixed(0)} MiB; with ${READERS} paused readers up to ${(peak / MiB).toFixed(0)} MiB (+${((peak - idle) / MiB).toFixed(1)} MiB)`)
  t.ok(peak - idle < 100 * MiB, `RSS grew by ${((peak - idle) / MiB).toFixed(1)} MiB, under 100 MiB`)

  const statusLines = await Promise.all(readers.map((reader) => statusLineOf(reader)))
  t.strictSame([...new Set(statusLines)], ['HTTP/1.1 200 OK'], 'every reader was being sent its list')
})
