import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { CHECK_INTERVAL_MS, HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS, endsCleanly, startFaultServer } from '../../support/fault-server.js'
import { exchange, head, parseJson } from '../../support/raw-http.js'

// Slow clients (slowloris) over real sockets against one spawned compiled server (see test/support/fault-server.ts).

const server = await startFaultServer(t)
const { port, request, assertHealthy } = server

t.test('slowloris: header bytes dripped every 250 ms are cut off at the headers timeout; others are served meanwhile', async (t) => {
  const slowHead = head('GET', '/health', { 'x-slow': 'a'.repeat(200) })
  const sent: number[] = []
  const drips = Array.from({ length: 3 }, (_, i) => exchange(port, async ({ socket, closed }) => {
    sent[i] = 0
    for (const byte of slowHead) {
      if (closed()) break
      socket.write(byte)
      sent[i]++
      await sleep(250)
    }
  }, REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS + 4000))
  let dripsDone = false
  const dripsClosed = Promise.all(drips).finally(() => { dripsDone = true })

  await sleep(300)
  const health = await request('GET', '/health')
  const login = await request('POST', '/auth/login', { body: JSON.stringify({ username: 'john', password: 'changeme' }) })
  t.notOk(dripsDone, 'the other requests completed while the slow clients were still dripping')
  t.equal(health.status, 200, 'GET /health is answered during the drip')
  t.equal(login.status, 200, 'POST /auth/login is answered during the drip')
  t.match(parseJson(login), { access_token: /^[\w-]+\.[\w-]+\.[\w-]+$/ })

  const results = await dripsClosed
  for (const [i, result] of results.entries()) {
    t.notOk(result.timedOut, `slow client ${i}: the server closed the connection`)
    t.ok(sent[i] > 2 && sent[i] < slowHead.length, `slow client ${i}: cut off mid-headers after ${sent[i]} bytes`)
    t.strictSame(result.responses.map((response) => response.status), [408], `slow client ${i}: answered 408`)
    t.ok(result.closedAfterMs >= HEADERS_TIMEOUT_MS - 100, `slow client ${i}: not before the headers timeout (${result.closedAfterMs} ms)`)
    // The request timeout would only close it after REQUEST_TIMEOUT_MS: this bound shows the headers timeout acted.
    t.ok(result.closedAfterMs < REQUEST_TIMEOUT_MS - 500, `slow client ${i}: closed by the headers timeout, well before the request timeout (${result.closedAfterMs} ms)`)
  }
  await assertHealthy(t, 'after the slow clients')
})

endsCleanly(t, server)
