import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { TEST_SECRET } from './support/app.js'
import { TRUST_PROXY_RULE } from '../src/config.js'
import { baseEnv, fetchKeepAlive, plainNode, serverFile, startServer } from './support/server.js'

async function json (response: Response): Promise<unknown> {
  return response.headers.get('content-length') === '0' ? undefined : response.json()
}

/** The status, once the body is read: a body left unread holds its connection open, and so the drain after SIGTERM. */
async function status (response: Promise<Response>): Promise<number> {
  const res = await response
  await res.arrayBuffer()
  return res.status
}

t.test('the compiled server serves every route over HTTP and stops cleanly on SIGTERM', async (t) => {
  // The in-flight login below was sent before the signal: its answer leaves the connection open, and idle.
  const { child, base, output } = await startServer(fetchKeepAlive.oneSecond)
  const exited = once(child, 'exit')
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

  const login = await post('/auth/login', { username: 'john', password: 'changeme' })
  t.equal(login.status, 200)
  const loginBody: unknown = await login.json()
  const token = typeof loginBody === 'object' && loginBody !== null && 'access_token' in loginBody ? String(loginBody.access_token) : ''
  t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/)
  const auth = { authorization: `Bearer ${token}` }

  const profile = await fetch(`${base}/profile`, { headers: auth })
  t.strictSame(await profile.json(), { userId: 1, username: 'john' })
  t.equal(await status(fetch(`${base}/profile`)), 401)

  const created = await post('/cats', { name: 'Tom', age: 3, breed: 'Siamese', extra: 1 })
  t.equal(created.status, 201)
  t.strictSame(await created.json(), { id: 1, name: 'Tom', age: 3, breed: 'Siamese' })
  t.equal(await status(post('/cats', { name: 'Tom', age: '3', breed: 'x' })), 400)
  t.strictSame(await json(await fetch(`${base}/cats/1`)), { id: 1, name: 'Tom', age: 3, breed: 'Siamese' })
  const updated = await fetch(`${base}/cats/1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"age":4}' })
  t.strictSame(await updated.json(), { id: 1, name: 'Tom', age: 4, breed: 'Siamese' })
  t.strictSame(await json(await fetch(`${base}/cats`)), [{ id: 1, name: 'Tom', age: 4, breed: 'Siamese' }])
  t.strictSame(await json(await fetch(`${base}/cats/1`, { method: 'DELETE' })), { deleted: true })
  const missing = await fetch(`${base}/cats/1`)
  t.equal(missing.status, 200)
  t.equal(await missing.text(), '')
  t.equal(await status(fetch(`${base}/metrics`)), 404, 'no /metrics by default (METRICS_ENABLED is off)')

  // A login takes a full password hash; SIGTERM arrives while it is in flight.
  const inFlight = post('/auth/login', { username: 'chris', password: 'secret' })
  await new Promise((resolve) => setTimeout(resolve, 50))
  child.kill('SIGTERM')
  // Once the server has taken the signal (it logs it), it is not ready: readiness answers 503, or the connection is refused.
  for (let waited = 0; !output().includes('shutting down') && waited < 10_000; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const readiness = await status(fetch(`${base}/health/ready`)).catch(() => 'refused')
  t.not(readiness, 200, `readiness during shutdown: ${readiness}`)
  t.equal(await status(inFlight), 200, 'the in-flight request finishes')
  const [code] = await exited
  t.equal(code, 0, 'exit code 0')
  t.notMatch(output(), new RegExp(token), 'the token never appears in the log')
  t.notMatch(output(), /changeme|secret"/, 'passwords never appear in the log')
})

t.test('invalid configuration stops the server before it listens, naming the variable', async (t) => {
  const child = spawn(...plainNode(serverFile), { env: { ...baseEnv, JWT_SECRET: 'short', PORT: 'abc' } })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += String(chunk) })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, /JWT_SECRET must NOT have fewer than 32 characters/)
  t.match(stderr, /PORT must be integer/)
})

t.test('TRUST_PROXY=true stops the server before it listens, naming the forms to set instead', async (t) => {
  const child = spawn(...plainNode(serverFile), { env: { ...baseEnv, JWT_SECRET: TEST_SECRET, PORT: '0', TRUST_PROXY: 'true' } })
  let output = ''
  child.stdout.on('data', (chunk) => { output += String(chunk) })
  child.stderr.on('data', (chunk) => { output += String(chunk) })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(output, `Invalid configuration: Error: ${TRUST_PROXY_RULE}`)
  t.notMatch(output, /Server listening/)
})

t.test('NODE_ENV=production without USERS_FILE exits non-zero with a message', async (t) => {
  const child = spawn(...plainNode(serverFile), { env: { ...baseEnv, JWT_SECRET: TEST_SECRET, PORT: '0', NODE_ENV: 'production' } })
  let output = ''
  child.stdout.on('data', (chunk) => { output += String(chunk) })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(output, /USERS_FILE is required/)
})

t.test('npm start reads a .env file from its working directory; variables set in the environment win over it', async (t) => {
  const dir = t.testdir({ '.env': 'CATS_AUTH=required\nDOCS_ENABLED=false\nPORT=1\n' })
  const { child, base } = await startServer({ DOCS_ENABLED: 'true', ...fetchKeepAlive.none }, dir)
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  t.equal(await status(fetch(`${base}/cats`)), 401, 'CATS_AUTH=required from the file took effect')
  t.equal(await status(fetch(`${base}/docs/json`)), 200, 'DOCS_ENABLED=true from the environment beat the file')
  t.not(new URL(base).port, '1', 'PORT=0 from the environment beat the file')
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  t.equal((await exited)[0], 0)
})

t.test('with METRICS_ENABLED=true the compiled server serves Prometheus text at /metrics (by default it does not: see the first test)', async (t) => {
  const on = await startServer({ METRICS_ENABLED: 'true', ...fetchKeepAlive.none })
  t.teardown(() => { if (on.child.exitCode === null) on.child.kill('SIGKILL') })
  t.equal(await status(fetch(`${on.base}/cats`)), 200)
  const scrape = await fetch(`${on.base}/metrics`)
  t.equal(scrape.status, 200)
  const text = await scrape.text()
  t.match(text, /^cats_api_http_request_duration_seconds_count\{method="GET",route="\/cats",status_code="200"\} 1$/m)
  t.match(text, /^nodejs_eventloop_lag_seconds /m)
  on.child.kill('SIGTERM')
  await once(on.child, 'exit')
})
