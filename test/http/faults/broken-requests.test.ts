import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { CHECK_INTERVAL_MS, REQUEST_TIMEOUT_MS, TOM, endsCleanly, startFaultServer } from '../../support/fault-server.js'
import { exchange, firstBody, jsonHead, parseJson } from '../../support/raw-http.js'

// Clients that vanish mid-body or lie about Content-Length, over real sockets against one spawned compiled
// server (see test/support/fault-server.ts); the tests share it and run in order, each leaves the store empty.

const server = await startFaultServer(t)
const { port, request, listCats, clearCats, assertHealthy } = server

t.test('clients that disconnect mid-body: no crash, nothing stored, later requests answered', async (t) => {
  t.strictSame(await listCats(), [], 'the store starts empty')
  // The first 100 bytes are a complete, valid cat: a server that acted on a partial body would store it.
  const partial = TOM.padEnd(100, ' ')
  const clients = Array.from({ length: 10 }, (_, i) => exchange(port, async ({ socket }) => {
    socket.write(jsonHead('POST', '/cats', 1000) + partial)
    await sleep(150)
    // Half close politely (FIN), half abort (RST).
    if (i % 2 === 0) socket.destroy()
    else socket.resetAndDestroy()
  }, 5000))
  const results = await Promise.all(clients)
  t.strictSame(results.map((result) => result.responses.length), Array(10).fill(0), 'no response is sent for an incomplete body')
  t.notOk(results.some((result) => result.timedOut), 'every client closed its own socket')

  await assertHealthy(t, 'after the disconnects')
  t.strictSame(await listCats(), [], 'nothing was stored from the partial bodies')
  const created = await request('POST', '/cats', { body: TOM })
  t.equal(created.status, 201, 'a normal create still works')
  t.strictSame(parseJson(created), { id: 1, name: 'Tom', age: 3, breed: 'Siamese' })
  await clearCats()
  t.strictSame(await listCats(), [])
})

t.test('Content-Length larger than the body sent: 408 at the request timeout, never a hang', async (t) => {
  const lying = exchange(port, async ({ socket }) => {
    socket.write(jsonHead('POST', '/cats', 1000) + TOM.padEnd(100, ' '))
  }, REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS + 4000)
  await sleep(300)
  const healthDuringWait = (await request('GET', '/health')).status
  const result = await lying

  t.equal(healthDuringWait, 200, 'other clients are answered while the lying client waits')
  t.notOk(result.timedOut, 'the server closed the connection; the client did not have to give up')
  t.strictSame(result.responses.map((response) => response.status), [408], 'one 408 answer, no 5xx')
  t.match(firstBody(result), { statusCode: 408, code: 'HTTP_ERR_CLIENT_TIMEOUT' })
  t.ok(result.closedAfterMs >= REQUEST_TIMEOUT_MS - 100, `closed after the request timeout (${result.closedAfterMs} ms)`)
  t.ok(result.closedAfterMs < REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS + 2000, `closed soon after the request timeout (${result.closedAfterMs} ms)`)
  await assertHealthy(t, 'after the 408')
  t.strictSame(await listCats(), [], 'the incomplete body was not stored')
})

t.test('Content-Length smaller than the body sent: the rest is a malformed next request (400)', async (t) => {
  t.test('the declared bytes are valid JSON: the cat is stored once; the garbage gets 400 and the socket closes', async (t) => {
    const result = await exchange(port, ({ socket }) => {
      socket.write(jsonHead('POST', '/cats', Buffer.byteLength(TOM), { connection: 'keep-alive' }) + TOM + 'GARBAGE\r\n\r\n')
    }, 5000)
    t.notOk(result.timedOut, 'the server closed the connection')
    const statuses = result.responses.map((response) => response.status)
    // The parse error of the trailing bytes closes the socket before the create's 201 can be written.
    t.strictSame(statuses, [400], 'only the 400 for the trailing bytes reaches the client (the 201 is lost with the socket)')
    t.match(firstBody(result), { statusCode: 400, error: 'Bad Request', code: 'HTTP_ERR_MALFORMED_REQUEST' })
    t.notOk(statuses.some((status) => status >= 500), 'no 5xx')
    t.strictSame(await listCats(), [{ id: 1, name: 'Tom', age: 3, breed: 'Siamese' }], 'the valid declared body was stored exactly once')
    await clearCats()
  })

  t.test('the declared bytes are a truncated JSON text: 400 and nothing stored', async (t) => {
    const result = await exchange(port, ({ socket }) => {
      socket.write(jsonHead('POST', '/cats', 10, { connection: 'keep-alive' }) + TOM)
    }, 5000)
    t.notOk(result.timedOut, 'the server closed the connection')
    const statuses = result.responses.map((response) => response.status)
    t.strictSame(statuses, [400], 'one 400, no 5xx')
    t.strictSame(await listCats(), [], 'nothing was stored')
  })

  await assertHealthy(t, 'after the short Content-Length requests')
})

endsCleanly(t, server)
