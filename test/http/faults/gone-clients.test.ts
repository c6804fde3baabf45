import t, { type Test } from 'tap'
import Fastify from 'fastify'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import serviceApp from '../../../src/app.js'
import { hashPassword } from '../../../src/auth/login/password.js'
import { loadConfig } from '../../../src/config.js'
import { serverOptions } from '../../../src/http/server-options.js'
import { logCapture, testConfig } from '../../support/app.js'
import { CHEAP_HASH } from '../../support/cheap-users.js'
import { exchange, head, jsonHead } from '../../support/raw-http.js'

// Clients that close their socket right after sending a request: the request reaches its handler with no client
// address (request.ip is undefined once the socket is gone), which must not be an error. The server runs in this
// process, as the standalone server sets it up, and its log lines are captured from its pino stream.

const users = [{ id: 1, username: 'john', passwordHash: await hashPassword('changeme', CHEAP_HASH) }]
const LOGIN = JSON.stringify({ username: 'john', password: 'changeme' })
const WRONG = JSON.stringify({ username: 'john', password: 'wrong' })
const TOM = JSON.stringify({ name: 'Tom', age: 3, breed: 'Siamese' })

async function server (t: Test): Promise<{ port: number, errorLines: () => string[] }> {
  const { stream, text } = logCapture()
  const config = loadConfig({ ...testConfig, LOG_LEVEL: 'info', REFRESH_TOKENS: 'true', LOGIN_MAX_FAILURES: 1_000_000, LOGIN_CLIENT_MAX_FAILURES: 1_000_000 })
  const app = Fastify(serverOptions(config, stream))
  await app.register(serviceApp, { config, users })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const errorLines = (): string[] => text().split('\n').filter((line) => /"level":(50|60)/.test(line))
  return { port: (app.server.address() as AddressInfo).port, errorLines }
}

/** Sends `request` and closes the socket at once, before any answer could come. */
const sendAndClose = async (port: number, request: string, reset = false): Promise<void> => {
  await exchange(port, ({ socket }) => { socket.write(request, () => reset ? socket.resetAndDestroy() : socket.destroy()) }, 5000)
}

t.test('a login and a keyed create whose client closed the socket at once log no error', async (t) => {
  const { port, errorLines } = await server(t)
  for (let i = 0; i < 20; i++) {
    await Promise.all([
      sendAndClose(port, jsonHead('POST', '/auth/login', Buffer.byteLength(LOGIN)) + LOGIN, true),
      sendAndClose(port, jsonHead('POST', '/auth/login', Buffer.byteLength(WRONG)) + WRONG, true),
      sendAndClose(port, jsonHead('POST', '/cats', Buffer.byteLength(TOM), { 'idempotency-key': `key-${i}` }) + TOM, true)
    ])
  }
  // The handlers of the last requests may still run: their log lines come within a few event-loop turns.
  await sleep(300)
  t.equal(errorLines().length, 0, 'no error-level line')
  t.strictSame(errorLines().slice(0, 1), [], 'the first of them')
  // The server still answers, and counts a client that stays.
  const kept = await exchange(port, ({ socket }) => { socket.write(jsonHead('POST', '/auth/login', Buffer.byteLength(LOGIN)) + LOGIN) }, 5000)
  t.equal(kept.responses[0]?.status, 200)
})

/** ~1,000 requests of many kinds, each over its own socket, most closed right after sending, some left to be answered. */
function fuzzRequests (count: number): string[] {
  const bodies = [LOGIN, WRONG, TOM, '{"refresh_token":"' + 'A'.repeat(43) + '"}', '{', '[]', '{"name":1}', '']
  const targets: Array<[string, string]> = [
    ['POST', '/auth/login'], ['POST', '/auth/refresh'], ['POST', '/auth/logout'], ['GET', '/auth/sessions'],
    ['POST', '/cats'], ['GET', '/cats'], ['GET', '/cats/1'], ['PUT', '/cats/1'], ['PATCH', '/cats/1'], ['DELETE', '/cats/1'],
    ['GET', '/profile'], ['GET', '/health'], ['GET', '/nowhere'], ['DELETE', '/auth/login'], ['GET', '/cats?limit=2']
  ]
  const requests: string[] = []
  for (let i = 0; i < count; i++) {
    const [method, path] = targets[i % targets.length]
    // Each target gets every body in turn, with and without a key and a (bad) token.
    const round = Math.floor(i / targets.length)
    const body = bodies[round % bodies.length]
    const headers: Record<string, string> = round % 3 === 0 ? { 'idempotency-key': `fuzz-${i}` } : {}
    if (round % 5 === 4) headers.authorization = 'Bearer x.y.z'
    if (method === 'PATCH') headers['content-type'] = 'application/merge-patch+json'
    requests.push(body === '' ? head(method, path, headers) : jsonHead(method, path, Buffer.byteLength(body), headers) + body)
  }
  return requests
}

t.test('1,000 raw requests, most from clients that close at once, leave no error-level line', async (t) => {
  const { port, errorLines } = await server(t)
  const requests = fuzzRequests(1000)
  let answered = 0
  // Twenty at a time: the closes overtake handlers that are still running.
  for (let start = 0; start < requests.length; start += 20) {
    await Promise.all(requests.slice(start, start + 20).map(async (request, i) => {
      if ((start + i) % 10 === 9) {
        const result = await exchange(port, ({ socket }) => { socket.write(request) }, 5000)
        if (result.responses.length === 1) answered++
      } else {
        await sendAndClose(port, request, true)
      }
    }))
  }
  await sleep(300)
  t.equal(answered, 100, 'every client that stayed got its answer')
  t.comment(`error-level lines in ${requests.length} requests: ${errorLines().length}`)
  t.equal(errorLines().length, 0, 'no error-level line')
  t.strictSame(errorLines().slice(0, 1), [], 'the first of them')
})
