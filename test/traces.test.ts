import t from 'tap'
import { once } from 'node:events'
import { join } from 'node:path'
import { hashPassword } from '../src/auth/login/password.js'
import { CHEAP_HASH } from './support/cheap-users.js'
import { otlpReceiver, spanTree, type ReceivedSpan } from './support/otlp-receiver.js'
import { freshKeyPrefix } from './support/redis.js'
import { fetchKeepAlive, startServer } from './support/server.js'
import { adminClient, freshServerSchema, urlWithSchema } from './support/sql-schemas.js'
import { TEST_SECRET } from './support/app.js'

// Traces of the compiled server, as `npm start` runs it with the standard OTEL_* settings, PostgreSQL and Redis: the
// spans of a login, a refresh and a PUT reach an OTLP/HTTP collector (in this process) when the server stops; the
// PUT continues the incoming traceparent, its children are the SQL statement and the Redis check of the token; the
// log lines carry the ids; and no token, password or key is in any span.

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const PARENT_ID = 'b7ad6b7169203331'
const PASSWORD = 'correct-horse-battery-staple-42'

if (TEST_DATABASE_URL === undefined || TEST_DATABASE_URL === '' || TEST_REDIS_URL === undefined || TEST_REDIS_URL === '') {
  t.comment('TEST_DATABASE_URL or TEST_REDIS_URL is not set: the traces of the compiled server were not checked')
} else {
  t.test('the compiled server with OTEL_* settings, on PostgreSQL and Redis', async (t) => {
    const receiver = await otlpReceiver(t)
    const schema = await freshServerSchema(t, await adminClient(t, TEST_DATABASE_URL), 'traces')
    const users = [{ id: 7, username: 'ada', passwordHash: await hashPassword(PASSWORD, CHEAP_HASH) }]
    const dir = t.testdir({ 'users.json': JSON.stringify(users) })
    const { child, base, output } = await startServer({
      DATABASE_URL: urlWithSchema(TEST_DATABASE_URL, schema),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: freshKeyPrefix(t, TEST_REDIS_URL),
      USERS_FILE: join(dir, 'users.json'),
      CATS_AUTH: 'required',
      REFRESH_TOKENS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // Nothing is sent before the server stops: the spans arrive only if the shutdown sends them.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      ...fetchKeepAlive.none
    })
    t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> => {
      const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
      t.ok(response.ok, `POST ${path}`)
      return await response.json() as Record<string, unknown>
    }

    const login = await post('/auth/login', { username: 'ada', password: PASSWORD })
    const refreshed = await post('/auth/refresh', { refresh_token: login.refresh_token })
    const token = String(refreshed.access_token)
    const authorization = `Bearer ${token}`
    const { id } = await post('/cats', { name: 'Tom', age: 3, breed: 'Siamese' }, { authorization })
    const put = await fetch(`${base}/cats/${String(id)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization, traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
      body: JSON.stringify({ age: 4 })
    })
    t.strictSame([put.status, await put.json()], [200, { id, name: 'Tom', age: 4, breed: 'Siamese' }])
    t.equal(receiver.requests.length, 0, 'no span sent while the server runs (OTEL_BSP_SCHEDULE_DELAY)')

    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    t.equal((await exited)[0], 0)
    const spans = receiver.spans()
    t.ok(spans.length > 0, 'the spans were sent at shutdown')
    const show = ({ name, attributes }: ReceivedSpan): string => `${name} ${JSON.stringify(attributes)}`

    t.test('one PUT: the request span continues the incoming trace; the SQL statement and the Redis check below it', async (t) => {
      const trace = spans.filter(({ traceId }) => traceId === TRACE_ID)
      t.comment(`the PUT's trace:\n${spanTree(trace, show)}`)
      const roots = trace.filter(({ parentSpanId }) => parentSpanId === PARENT_ID)
      t.equal(roots.length, 1, 'one span for the request, the child of the incoming span')
      const [request] = roots
      t.equal(request.name, 'PUT /cats/:id')
      t.equal(request.kind, 2, 'a server span')
      t.match(request.attributes, { 'http.route': '/cats/:id', 'http.response.status_code': 200, 'http.request.method': 'PUT', 'enduser.id': '7' })
      const below = (parent: ReceivedSpan): ReceivedSpan[] => trace.filter(({ parentSpanId }) => parentSpanId === parent.spanId)
        .flatMap((span) => [span, ...below(span)])
      const descendants = below(request)
      t.equal(descendants.length, trace.length - 1, 'every other span of the trace is below it')
      const sql = descendants.filter(({ attributes }) => attributes['db.system.name'] === 'postgresql')
      t.match(sql, [{ name: 'cats_merge_many_versioned', kind: 3, attributes: { 'db.operation.name': 'SELECT', 'db.query.summary': 'cats_merge_many_versioned', 'db.query.text': /cats_merge_many_versioned\(\$1, \$2, \$3, \$4, \$5\)/ } }],
        'the merge: one statement')
      t.ok(descendants.some(({ kind, attributes }) => kind === 3 && attributes['db.system.name'] === 'redis'), 'the token checked against the denylist in Redis')
    })

    t.test('the login: the password hash, the login counters in Redis, the session in PostgreSQL', async (t) => {
      const loginSpan = spans.find(({ name }) => name === 'POST /auth/login')
      const trace = spans.filter(({ traceId }) => traceId === loginSpan?.traceId)
      t.comment(`the login's trace:\n${spanTree(trace, show)}`)
      t.equal(loginSpan?.parentSpanId, '', 'a new trace: no traceparent was sent')
      t.ok(trace.some(({ name }) => name === 'password hash'))
      t.ok(trace.some(({ attributes }) => attributes['db.system.name'] === 'redis'))
      t.ok(trace.some(({ name }) => name === 'transaction') && trace.some(({ attributes }) => String(attributes['db.query.text']).startsWith(`INSERT INTO "${schema}".sessions`)))
    })

    t.test('no span holds the password, a token, the refresh token or the signing key, nor the Authorization header', async (t) => {
      const sent = receiver.requests.map(({ body }) => body.toString('utf8')).join('\n')
      const secrets = {
        password: PASSWORD,
        'access token': String(login.access_token),
        'its signature': String(login.access_token).split('.')[2],
        'refreshed access token': token,
        'refresh token': String(login.refresh_token),
        'its MAC': String(login.refresh_token).split('.').at(-1),
        'the new refresh token': String(refreshed.refresh_token),
        'signing key': TEST_SECRET,
        'bearer scheme': 'Bearer'
      }
      for (const [name, secret] of Object.entries(secrets)) t.notOk(sent.includes(String(secret)), `no ${name}`)
      t.notOk(/authorization|password|refresh_token/i.test(Object.keys(Object.assign({}, ...spans.map(({ attributes }) => attributes))).join(' ')), 'no attribute named for one')
    })

    t.test('the log lines of a traced request carry its trace and span ids', async (t) => {
      const lines = output().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line))
      const request = spans.find(({ parentSpanId }) => parentSpanId === PARENT_ID)
      const completed = lines.find((line) => line.msg === 'request completed' && line.trace_id === TRACE_ID)
      t.equal(completed?.span_id, request?.spanId)
      t.equal(completed?.res?.statusCode, 200)
    })
  })
}
