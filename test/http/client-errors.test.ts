import t from 'tap'
import Fastify from 'fastify'
import { loadConfig } from '../../src/config.js'
import { serverOptions } from '../../src/http/server-options.js'
import { PROBLEM_JSON } from '../../src/http/problem-details.js'
import { PROBLEM_TYPE_PREFIX } from '../../src/http/error-limits.js'
import { TEST_SECRET } from '../support/app.js'
import { exchange, firstBody, head } from '../support/raw-http.js'

// A server with the standalone options; requests Node's parser refuses never reach a route.
const config = loadConfig({ JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'silent', MAX_HEADER_BYTES: 2048, REQUEST_TIMEOUT_MS: 500 })
const server = Fastify(serverOptions(config))
server.get('/', async () => ({ ok: true }))
server.post('/upload', async () => ({ ok: true }))
await server.listen({ port: 0, host: '127.0.0.1' })
t.teardown(() => server.close())
const address = server.server.address()
const port = typeof address === 'object' && address !== null ? address.port : 0

t.test('headers over MAX_HEADER_BYTES get 431 in the error shape, then the connection closes', async (t) => {
  const result = await exchange(port, ({ socket }) => { socket.write(head('GET', '/', { 'x-big': 'a'.repeat(4096) })) }, 5000)
  t.strictSame(result.responses.map((response) => response.status), [431])
  t.strictSame(firstBody(result), {
    statusCode: 431, error: 'Request Header Fields Too Large', message: 'The request headers are too large', code: 'HTTP_ERR_HEADERS_TOO_LARGE'
  })
  t.equal(result.responses[0].headers.connection, 'close')
  t.equal(result.timedOut, false)
})

t.test('bytes that are not HTTP get 400 in the error shape', async (t) => {
  const result = await exchange(port, ({ socket }) => { socket.write('NOT HTTP AT ALL\r\n\r\n') }, 5000)
  t.strictSame(firstBody(result), {
    statusCode: 400, error: 'Bad Request', message: 'The request is not valid HTTP', code: 'HTTP_ERR_MALFORMED_REQUEST'
  })
})

t.test('a request that does not arrive in time gets 408 in the error shape', async (t) => {
  const result = await exchange(port, ({ socket }) => { socket.write('GET / HTTP/1.1\r\nhost: x\r\n') }, 5000)
  t.strictSame(firstBody(result), {
    statusCode: 408, error: 'Request Timeout', message: 'The request took too long to arrive', code: 'HTTP_ERR_CLIENT_TIMEOUT'
  })
})

t.test('a body that breaks HTTP after the headers arrived: the answer takes the shape their Accept asks for', async (t) => {
  // A chunked body whose chunk size is not hexadecimal: Node refuses it once the route is already waiting for it.
  const broken = (accept: string) => `POST /upload?x=1 HTTP/1.1\r\nhost: x\r\naccept: ${accept}\r\ncontent-type: application/json\r\n` +
    'transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'
  const problem = await exchange(port, ({ socket }) => { socket.write(broken('application/problem+json')) }, 5000)
  t.strictSame(problem.responses.map((response) => response.status), [400])
  t.equal(problem.responses[0].headers['content-type'], PROBLEM_JSON)
  t.equal(problem.responses[0].headers.vary, 'Accept')
  t.strictSame(firstBody(problem), {
    type: `${PROBLEM_TYPE_PREFIX}HTTP_ERR_MALFORMED_REQUEST`,
    title: 'Bad Request',
    status: 400,
    detail: 'The request is not valid HTTP',
    instance: '/upload',
    code: 'HTTP_ERR_MALFORMED_REQUEST'
  })
  const plain = await exchange(port, ({ socket }) => { socket.write(broken('*/*')) }, 5000)
  t.equal(plain.responses[0].headers['content-type'], 'application/json; charset=utf-8')
  t.equal(plain.responses[0].headers.vary, 'Accept')
  t.strictSame(firstBody(plain), { statusCode: 400, error: 'Bad Request', message: 'The request is not valid HTTP', code: 'HTTP_ERR_MALFORMED_REQUEST' })
})

t.test('a connection the client resets gets no answer and does not disturb the server', async (t) => {
  const result = await exchange(port, ({ socket }) => {
    socket.write('GET / HTTP/1.1\r\nhost: x\r\n')
    socket.resetAndDestroy()
  }, 5000)
  t.strictSame(result.responses, [])
  const ok = await exchange(port, ({ socket }) => { socket.write(head('GET', '/')) }, 5000)
  t.strictSame(ok.responses.map((response) => response.status), [200])
})

t.test('at LOG_LEVEL=trace a refused request is logged without its bytes: no token or password reaches the log', async (t) => {
  const lines: string[] = []
  const destination = { write: (line: string) => { lines.push(line) } }
  const traced = Fastify(serverOptions(loadConfig({ JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'trace' }), destination))
  await traced.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => traced.close())
  const tracedAddress = traced.server.address()
  const tracedPort = typeof tracedAddress === 'object' && tracedAddress !== null ? tracedAddress.port : 0
  const token = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.secret-signature-part'
  const password = 'a-password-nobody-should-read'
  const body = JSON.stringify({ username: 'john', password })
  // A header name with a control character: Node's parser refuses the request after reading the Authorization header.
  const request = `POST /auth/login HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nBad\u0001Header: v\r\n\r\n${body}`
  const result = await exchange(tracedPort, ({ socket }) => { socket.write(request) }, 5000)
  t.strictSame(result.responses.map((response) => response.status), [400])
  const log = lines.join('')
  const entries = log.trim().split('\n').map((line) => JSON.parse(line))
  t.match(entries.find((entry) => entry.msg === 'client error'), { level: 10, code: 'HPE_INVALID_HEADER_TOKEN', reason: /Invalid header/ }, 'the refusal is logged, with why')
  t.notOk(log.includes('rawPacket'), 'not the raw bytes')
  for (const secret of [token, password]) {
    t.notOk(log.includes(secret), 'no secret as text')
    t.notOk(log.includes([...Buffer.from(secret)].join(',')), 'nor as the numbers of a logged Buffer')
  }
})
