import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { BODY_LIMIT, CHECK_INTERVAL_MS, REQUEST_TIMEOUT_MS, TOM, endsCleanly, startFaultServer } from '../../support/fault-server.js'
import { exchange, firstBody, head, jsonHead, parseJson } from '../../support/raw-http.js'

// Requests over the limits (headers over MAX_HEADER_BYTES, bodies over BODY_LIMIT, deeply nested JSON) over
// real sockets against one spawned compiled server (see test/support/fault-server.ts); the tests share it and
// run in order, each leaves the store empty.

const server = await startFaultServer(t)
const { port, request, listCats, clearCats, assertHealthy } = server

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

t.test('request headers: over MAX_HEADER_BYTES → 431, a forged token under it → 401', async (t) => {
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

t.test('bodies: over BODY_LIMIT → 413; deeply nested JSON within it → 400', async (t) => {
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

endsCleanly(t, server)
