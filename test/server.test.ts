import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { verifyPassword } from '../src/auth/password.js'
import { TEST_SECRET } from './support/app.js'
import { renderConfigTable, renderEnvExample } from '../src/config-docs.js'
import { TRUST_PROXY_RULE } from '../src/config.js'
import { closedPort } from './support/ports.js'
import { baseEnv, serverFile, startServer } from './support/server.js'

async function json (response: Response): Promise<unknown> {
  return response.headers.get('content-length') === '0' ? undefined : response.json()
}

t.test('the compiled server serves every route over HTTP and stops cleanly on SIGTERM', async (t) => {
  const { child, base, output } = await startServer()
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
  t.equal((await fetch(`${base}/profile`)).status, 401)

  const created = await post('/cats', { name: 'Tom', age: 3, breed: 'Siamese', extra: 1 })
  t.equal(created.status, 201)
  t.strictSame(await created.json(), { id: 1, name: 'Tom', age: 3, breed: 'Siamese' })
  t.equal((await post('/cats', { name: 'Tom', age: '3', breed: 'x' })).status, 400)
  t.strictSame(await json(await fetch(`${base}/cats/1`)), { id: 1, name: 'Tom', age: 3, breed: 'Siamese' })
  const updated = await fetch(`${base}/cats/1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"age":4}' })
  t.strictSame(await updated.json(), { id: 1, name: 'Tom', age: 4, breed: 'Siamese' })
  t.strictSame(await json(await fetch(`${base}/cats`)), [{ id: 1, name: 'Tom', age: 4, breed: 'Siamese' }])
  t.strictSame(await json(await fetch(`${base}/cats/1`, { method: 'DELETE' })), { deleted: true })
  const missing = await fetch(`${base}/cats/1`)
  t.equal(missing.status, 200)
  t.equal(await missing.text(), '')

  // A login takes a full password hash; SIGTERM arrives while it is in flight.
  const inFlight = post('/auth/login', { username: 'chris', password: 'secret' })
  await new Promise((resolve) => setTimeout(resolve, 50))
  child.kill('SIGTERM')
  // Once the server has taken the signal (it logs it), it is not ready: readiness answers 503, or the connection is refused.
  for (let waited = 0; !output().includes('shutting down') && waited < 10_000; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const readiness = await fetch(`${base}/health/ready`).then((res) => res.status, () => 'refused')
  t.not(readiness, 200, `readiness during shutdown: ${readiness}`)
  t.equal((await inFlight).status, 200, 'the in-flight request finishes')
  const [code] = await exited
  t.equal(code, 0, 'exit code 0')
  t.notMatch(output(), new RegExp(token), 'the token never appears in the log')
  t.notMatch(output(), /changeme|secret"/, 'passwords never appear in the log')
})

t.test('invalid configuration stops the server before it listens, naming the variable', async (t) => {
  const child = spawn(process.execPath, [serverFile], { env: { ...baseEnv, JWT_SECRET: 'short', PORT: 'abc' } })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += String(chunk) })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, /JWT_SECRET must NOT have fewer than 32 characters/)
  t.match(stderr, /PORT must be integer/)
})

t.test('TRUST_PROXY=true stops the server before it listens, naming the forms to set instead', async (t) => {
  const child = spawn(process.execPath, [serverFile], { env: { ...baseEnv, JWT_SECRET: TEST_SECRET, PORT: '0', TRUST_PROXY: 'true' } })
  let output = ''
  child.stdout.on('data', (chunk) => { output += String(chunk) })
  child.stderr.on('data', (chunk) => { output += String(chunk) })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(output, `Invalid configuration: Error: ${TRUST_PROXY_RULE}`)
  t.notMatch(output, /Server listening/)
})

t.test('NODE_ENV=production without USERS_FILE exits non-zero with a message', async (t) => {
  const child = spawn(process.execPath, [serverFile], { env: { ...baseEnv, JWT_SECRET: TEST_SECRET, PORT: '0', NODE_ENV: 'production' } })
  let output = ''
  child.stdout.on('data', (chunk) => { output += String(chunk) })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(output, /USERS_FILE is required/)
})

async function runCli (file: string, args: string[], stdin: string, env: Record<string, string> = {}, cwd?: string): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, '..', 'dist', 'src', 'cli', file), ...args], { env: { ...baseEnv, ...env }, cwd })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => { stdout += String(chunk) })
  child.stderr.on('data', (chunk) => { stderr += String(chunk) })
  child.stdin.end(stdin)
  const [code] = await once(child, 'exit')
  return { code, stdout, stderr }
}

t.test('hash-password reads standard input and prints a hash that verifies', async (t) => {
  const { code, stdout } = await runCli('hash-password.js', [], 'correct horse\n')
  t.equal(code, 0)
  const hash = stdout.trim()
  t.match(hash, /^\$scrypt\$ln=14,r=8,p=5\$/)
  t.ok(await verifyPassword('correct horse', hash), 'the trailing newline is not part of the password')
  t.notOk(await verifyPassword('wrong', hash))
  const empty = await runCli('hash-password.js', [], '')
  t.equal(empty.code, 1)
  t.match(empty.stderr, /Usage/)
})

t.test('npm run openapi writes the OpenAPI document to a file', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'openapi.json')
  const { code } = await runCli('openapi.js', [file], '')
  t.equal(code, 0)
  const doc = JSON.parse(readFileSync(file, 'utf8'))
  t.equal(doc.openapi, '3.1.0')
  t.ok(doc.paths['/cats/{id}'])
})

t.test('npm run migrate upgrades a database made by the earlier start-up code, and shows the status', async (t) => {
  const dir = t.testdir()
  const env = { DATABASE_URL: `pglite://${dir}` }
  // The schema as the start-up code before versioned migrations created it, with two cats.
  const legacy = new PGlite(dir)
  await legacy.exec(`
    CREATE TABLE cats (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id bigint NOT NULL, data json NOT NULL);
    CREATE INDEX cats_id_seq_idx ON cats (id, seq);
    CREATE TABLE cats_count (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), count bigint NOT NULL);
    INSERT INTO cats (id, data) VALUES (1, '{"id":1,"name":"Tom","age":3,"breed":"Siamese"}'), (2, '{"id":2,"name":"Kit","age":1,"breed":"Persian"}');
    INSERT INTO cats_count VALUES (true, 2);
  `)
  await legacy.close()

  const pending = await runCli('migrate.js', ['status'], '', env)
  t.equal(pending.code, 0)
  t.match(pending.stdout, /^version\s+name\s+state\n001\s+cats\s+pending\n002\s+idempotency-keys\s+pending\n003\s+sessions\s+pending\n004\s+cats-merge\s+pending\n005\s+cats-merge-many\s+pending\n006\s+cats-create-many\s+pending\n007\s+session-records\s+pending\n008\s+idempotency-key-limits\s+pending\n$/)
  const migrated = await runCli('migrate.js', [], '', env)
  t.equal(migrated.code, 0)
  t.equal(migrated.stdout, 'Applied 001 cats\nApplied 002 idempotency-keys\nApplied 003 sessions\nApplied 004 cats-merge\nApplied 005 cats-merge-many\nApplied 006 cats-create-many\nApplied 007 session-records\nApplied 008 idempotency-key-limits\nThe cats schema is up to date\n')
  const again = await runCli('migrate.js', [], '', env)
  t.equal(again.stdout, 'The cats schema is up to date\n', 'a second run applies nothing')
  const applied = await runCli('migrate.js', ['status'], '', env)
  t.match(applied.stdout, /\n001\s+cats\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n002\s+idempotency-keys\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n003\s+sessions\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n004\s+cats-merge\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n005\s+cats-merge-many\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n006\s+cats-create-many\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n007\s+session-records\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n008\s+idempotency-key-limits\s+applied \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n$/)

  const upgraded = new PGlite(dir)
  t.teardown(() => upgraded.close())
  const { rows } = await upgraded.query<{ data: unknown }>('SELECT data FROM cats ORDER BY seq')
  t.strictSame(rows.map((row) => row.data), [
    { id: 1, name: 'Tom', age: 3, breed: 'Siamese' },
    { id: 2, name: 'Kit', age: 1, breed: 'Persian' }
  ], 'the cats are kept')
})

t.test('npm run migrate: usage, no DATABASE_URL, and a database that cannot be reached', async (t) => {
  const usage = await runCli('migrate.js', ['sideways'], '')
  t.equal(usage.code, 1)
  t.match(usage.stderr, /Usage: npm run migrate \[-- status\]/)
  const none = await runCli('migrate.js', [], '')
  t.equal(none.code, 1)
  t.match(none.stderr, /DATABASE_URL is not set/)
  const port = await closedPort()
  const unreachable = await runCli('migrate.js', ['status'], '', { DATABASE_URL: `postgres://cats:hunter2@127.0.0.1:${port}/cats` })
  t.equal(unreachable.code, 1)
  t.match(unreachable.stderr, /^Migration failed: .*ECONNREFUSED/)
  t.notMatch(unreachable.stderr, /hunter2/, 'the password is not printed')
})

t.test('npm start reads a .env file from its working directory; variables set in the environment win over it', async (t) => {
  const dir = t.testdir({ '.env': 'CATS_AUTH=required\nDOCS_ENABLED=false\nPORT=1\n' })
  const { child, base } = await startServer({ DOCS_ENABLED: 'true' }, dir)
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  t.equal((await fetch(`${base}/cats`)).status, 401, 'CATS_AUTH=required from the file took effect')
  t.equal((await fetch(`${base}/docs/json`)).status, 200, 'DOCS_ENABLED=true from the environment beat the file')
  t.not(new URL(base).port, '1', 'PORT=0 from the environment beat the file')
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  t.equal((await exited)[0], 0)
})

t.test('npm run migrate takes DATABASE_URL from a .env file too', async (t) => {
  const dir = t.testdir({ '.env': 'DATABASE_URL=pglite://./data\n' })
  const { code, stdout } = await runCli('migrate.js', [], '', {}, dir)
  t.equal(code, 0)
  t.equal(stdout, 'Applied 001 cats\nApplied 002 idempotency-keys\nApplied 003 sessions\nApplied 004 cats-merge\nApplied 005 cats-merge-many\nApplied 006 cats-create-many\nApplied 007 session-records\nApplied 008 idempotency-key-limits\nThe cats schema is up to date\n')
})

t.test('npm run settings rewrites .env.example and the README table in its working directory', async (t) => {
  const dir = t.testdir({ 'README.md': '# Title\n\n<!-- settings:start -->\nstale\n<!-- settings:end -->\n\nAfter.\n' })
  const { code, stdout } = await runCli('settings.js', [], '', {}, dir)
  t.equal(code, 0)
  t.match(stdout, /Wrote \.env\.example/)
  t.equal(readFileSync(join(dir, '.env.example'), 'utf8'), renderEnvExample())
  t.equal(readFileSync(join(dir, 'README.md'), 'utf8'), `# Title\n\n<!-- settings:start -->\n${renderConfigTable()}\n<!-- settings:end -->\n\nAfter.\n`)
})

t.test('with METRICS_ENABLED=true the compiled server serves Prometheus text at /metrics; by default it does not', async (t) => {
  const on = await startServer({ METRICS_ENABLED: 'true' })
  t.teardown(() => { if (on.child.exitCode === null) on.child.kill('SIGKILL') })
  await fetch(`${on.base}/cats`)
  const scrape = await fetch(`${on.base}/metrics`)
  t.equal(scrape.status, 200)
  const text = await scrape.text()
  t.match(text, /^cats_api_http_request_duration_seconds_count\{method="GET",route="\/cats",status_code="200"\} 1$/m)
  t.match(text, /^nodejs_eventloop_lag_seconds /m)
  on.child.kill('SIGTERM')
  await once(on.child, 'exit')

  const off = await startServer()
  t.teardown(() => { if (off.child.exitCode === null) off.child.kill('SIGKILL') })
  t.equal((await fetch(`${off.base}/metrics`)).status, 404)
  off.child.kill('SIGTERM')
  await once(off.child, 'exit')
})
