import t, { type Test } from 'tap'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/config.js'
import { hashPassword } from '../src/auth/password.js'
import { TEST_SECRET } from './support/app.js'
import { startServer, type RunningServer } from './support/server.js'
import { exchange, firstBody, head, jsonHead, parseJson, type HttpResponse } from './support/raw-http.js'

// Fault tests over real sockets against one spawned compiled server: clients that
// vanish, lie about Content-Length, drip headers, send huge headers or bodies.
// The tests share the server and run in order; each leaves the cat store empty.

const HEADERS_TIMEOUT_MS = 1500
const REQUEST_TIMEOUT_MS = 5000
/** The idle-socket timeout: longer than the others, so it never explains a close seen here. */
const CONNECTION_TIMEOUT_MS = 15_000
/** Above Node's own 16 KiB default, so a 24 KB header proves the setting is applied. */
const MAX_HEADER_BYTES = 32_768
/** The service's default BODY_LIMIT: it is not set here, so the default is what is tested. */
const { BODY_LIMIT } = loadConfig({ JWT_SECRET: TEST_SECRET })
/** How often Node checks the header and request timeouts (src/http/server-options.ts). */
const CHECK_INTERVAL_MS = 1000

/**
 * john/changeme with a cheap hash: the logins here show that other requests are served while slow clients
 * hold connections, and the demo users' slow hashes, run below request priority, can take seconds on a
 * machine busy with the rest of the suite.
 */
async function cheapUsersFile (): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), 'faults-users-')), 'users.json')
  await writeFile(file, JSON.stringify([{ id: 1, username: 'john', passwordHash: await hashPassword('changeme', { ln: 4, r: 8, p: 1 }) }]))
  return file
}

/** Starts the compiled server with the limits under test. */
async function startLimitedServer (): Promise<{ child: RunningServer['child'], port: number, output: () => string }> {
  const { child, base, output } = await startServer({
    USERS_FILE: await cheapUsersFile(),
    LOG_LEVEL: 'info',
    HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    CONNECTION_TIMEOUT_MS: String(CONNECTION_TIMEOUT_MS),
    MAX_HEADER_BYTES: String(MAX_HEADER_BYTES)
  })
  return { child, port: Number(new URL(base).port), output }
}

function base64url (value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

/** A JWT-shaped token with a made-up signature, about `size` characters long. */
function forgedToken (size: number): string {
  const header = base64url({ alg: 'HS256', typ: 'JWT' })
  const signature = Buffer.alloc(32, 7).toString('base64url')
  const padding = Math.max(0, Math.floor((size - header.length - signature.length - 60) * 3 / 4))
  const payload = base64url({ sub: 1, username: 'john', pad: 'x'.repeat(padding) })
  return `${header}.${payload}.${signature}`
}

const server = await startLimitedServer()
const { child, port } = server
t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })

/** One ordinary request on its own connection; exactly one response is expected. */
async function request (method: string, path: string, options: { body?: string, headers?: Record<string, string> } = {}): Promise<HttpResponse> {
  const { body } = options
  const text = body === undefined
    ? head(method, path, options.headers)
    : jsonHead(method, path, Buffer.byteLength(body), options.headers) + body
  const result = await exchange(port, ({ socket }) => { socket.write(text) }, 10_000)
  const [response] = result.responses
  if (response === undefined || result.responses.length !== 1) {
    throw new Error(`expected one response to ${method} ${path}, got ${JSON.stringify(result.raw.slice(0, 300))} (${String(result.error)})`)
  }
  return response
}

async function listCats (): Promise<unknown> {
  const response = await request('GET', '/cats')
  if (response.status !== 200) throw new Error(`GET /cats answered ${response.status}`)
  return parseJson(response)
}

/** Deletes every stored cat (at most `max` of them), so each test starts and ends with an empty store. */
async function clearCats (max = 20): Promise<void> {
  for (let i = 0; i < max; i++) {
    const cats = await listCats()
    if (!Array.isArray(cats) || cats.length === 0) return
    const first: unknown = cats[0]
    const id = typeof first === 'object' && first !== null && 'id' in first ? String(first.id) : ''
    await request('DELETE', `/cats/${id}`)
  }
}

const isAlive = (): boolean => child.exitCode === null && child.signalCode === null

async function assertHealthy (t: Test, when: string): Promise<void> {
  t.ok(isAlive(), `the server process is still running ${when}`)
  const health = await request('GET', '/health')
  t.equal(health.status, 200, `GET /health answers 200 ${when}`)
  t.strictSame(parseJson(health), { status: 'ok' })
}

const TOM = '{"name":"Tom","age":3,"breed":"Siamese"}'

t.test('1. clients that disconnect mid-body: no crash, nothing stored, later requests answered', async (t) => {
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

t.test('2a. Content-Length larger than the body sent: 408 at the request timeout, never a hang', async (t) => {
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

t.test('2b. Content-Length smaller than the body sent: the rest is a malformed next request (400)', async (t) => {
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

t.test('3. slowloris: header bytes dripped every 250 ms are cut off at the headers timeout; others are served meanwhile', async (t) => {
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

t.test('4. request headers: over MAX_HEADER_BYTES → 431, a forged token under it → 401', async (t) => {
  for (const size of [10_000, 24_000]) {
    const token = forgedToken(size)
    t.ok(token.length >= size - 100 && token.length <= size, `the forged token is about ${size} bytes (${token.length})`)
    const response = await request('GET', '/profile', { headers: { authorization: `Bearer ${token}` } })
    t.equal(response.status, 401, `a ${token.length}-byte forged token gets 401`)
    t.equal(response.headers['www-authenticate'], 'Bearer error="invalid_token"')
    t.strictSame(parseJson(response), { statusCode: 401, error: 'Unauthorized', message: 'Invalid or expired access token', code: 'AUTH_ERR_INVALID_TOKEN' })
  }

  for (const size of [40_000, 100_000]) {
    const result = await exchange(port, ({ socket }) => {
      socket.write(head('GET', '/profile', { authorization: `Bearer ${forgedToken(size)}` }))
    }, 5000)
    t.notOk(result.timedOut, `${size}-byte header: the server closed the connection`)
    t.strictSame(result.responses.map((response) => response.status), [431], `${size}-byte header: 431, not a 5xx`)
    t.match(firstBody(result), { statusCode: 431, code: 'HTTP_ERR_HEADERS_TOO_LARGE' })
  }
  await assertHealthy(t, 'after the oversized headers')
})

t.test('5. bodies: over BODY_LIMIT → 413; deeply nested JSON within it → 400', async (t) => {
  const catOfSize = (size: number): string => {
    const text = JSON.stringify({ name: '', age: 1, breed: 'b' })
    return JSON.stringify({ name: 'x'.repeat(size - text.length), age: 1, breed: 'b' })
  }

  t.test('a body just under the limit is accepted', async (t) => {
    const body = catOfSize(BODY_LIMIT - 100)
    t.equal((await request('POST', '/cats', { body })).status, 201)
    await clearCats()
  })

  t.test('a body over the limit gets 413 and is not stored', async (t) => {
    const body = catOfSize(BODY_LIMIT + 1000)
    const response = await request('POST', '/cats', { body })
    t.equal(response.status, 413)
    t.strictSame(parseJson(response), {
      statusCode: 413, error: 'Payload Too Large', message: 'Request body is too large', code: 'FST_ERR_CTP_BODY_TOO_LARGE'
    })
    t.strictSame(await listCats(), [])
  })

  t.test('a declared Content-Length over the limit gets 413 before any body byte is sent', async (t) => {
    // Were the server to wait for the body, this would end in a 408 at the request timeout.
    const result = await exchange(port, ({ socket }) => {
      socket.write(jsonHead('POST', '/cats', BODY_LIMIT + 1000))
    }, REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS + 4000)
    t.notOk(result.timedOut)
    t.strictSame(result.responses.map((response) => response.status), [413])
  })

  t.test('a chunked body that grows over the limit gets 413', async (t) => {
    const result = await exchange(port, async ({ socket, closed }) => {
      socket.write(head('POST', '/cats', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }))
      const chunk = ' '.repeat(4096)
      for (let sent = 0; sent < 2 * BODY_LIMIT && !closed(); sent += chunk.length) {
        socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
        await sleep(20)
      }
    }, REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS + 4000)
    t.notOk(result.timedOut)
    t.strictSame(result.responses.map((response) => response.status), [413])
    t.strictSame(await listCats(), [])
  })

  // As deep as the body limit allows (up to 5000 arrays, 2500 objects): far beyond any sane nesting.
  const arrayDepth = Math.min(5000, Math.floor((BODY_LIMIT - 100) / 2))
  const objectDepth = Math.min(2500, Math.floor((BODY_LIMIT - 100) / 6))
  t.test(`${arrayDepth} nested arrays to POST /cats and PUT /cats/1, and ${objectDepth} nested objects to PUT /cats/1: 400`, async (t) => {
    t.equal((await request('POST', '/cats', { body: TOM })).status, 201)
    const arrays = '['.repeat(arrayDepth) + ']'.repeat(arrayDepth)
    const objects = '{"a":'.repeat(objectDepth) + '1' + '}'.repeat(objectDepth)
    t.ok(arrays.length < BODY_LIMIT && objects.length + 10 < BODY_LIMIT, 'the nested bodies are within the body limit')
    t.ok(arrayDepth >= 1000 && objectDepth >= 100, `deeply nested: ${arrayDepth} arrays, ${objectDepth} objects`)

    const created = await request('POST', '/cats', { body: arrays })
    t.equal(created.status, 400, 'POST /cats with nested arrays: 400')
    t.match(parseJson(created), { statusCode: 400, code: 'FST_ERR_VALIDATION' })

    for (const [label, body] of [['nested arrays', arrays], ['nested objects', objects], ['nested objects in a field', `{"meta":${objects}}`]]) {
      const updated = await request('PUT', '/cats/1', { body })
      t.equal(updated.status, 400, `PUT /cats/1 with ${label}: 400`)
      t.match(parseJson(updated), { statusCode: 400, code: 'FST_ERR_VALIDATION' })
    }
    const read = await request('GET', '/cats/1')
    t.equal(read.status, 200)
    t.strictSame(parseJson(read), { id: 1, name: 'Tom', age: 3, breed: 'Siamese' }, 'the record is unchanged and still serializes')
    t.strictSame(await listCats(), [{ id: 1, name: 'Tom', age: 3, breed: 'Siamese' }], 'nothing else was stored')
    await clearCats()
  })

  await assertHealthy(t, 'after the body tests')
})

t.test('6. after all of the above the server is alive, logged no errors, and exits 0 on SIGTERM', async (t) => {
  await assertHealthy(t, 'at the end')
  t.notMatch(server.output(), /"level":(50|60)/, 'no error or fatal line was logged')
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const cap = sleep(8000).then(() => 'still running')
  const outcome = await Promise.race([exited, cap])
  t.strictSame(outcome, [0, null], 'exit code 0 after SIGTERM')
})
