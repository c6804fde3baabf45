import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { verifyPassword } from '../src/auth/password.js'
import { TEST_SECRET } from './support/app.js'
import { baseEnv, serverFile, startServer } from './support/server.js'

async function json (response: Response): Promise<unknown> {
  return response.headers.get('content-length') === '0' ? undefined : response.json()
}

t.test('R3: the compiled server serves every route over HTTP and stops cleanly on SIGTERM', async (t) => {
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
  await new Promise((resolve) => setTimeout(resolve, 20))
  // While shutting down the server is not ready: readiness answers 503, or the connection is refused.
  const readiness = await fetch(`${base}/health/ready`).then((res) => res.status, () => 'refused')
  t.not(readiness, 200, `readiness during shutdown: ${readiness}`)
  t.equal((await inFlight).status, 200, 'the in-flight request finishes')
  const [code] = await exited
  t.equal(code, 0, 'exit code 0')
  t.notMatch(output(), new RegExp(token), 'the token never appears in the log')
  t.notMatch(output(), /changeme|secret"/, 'passwords never appear in the log')
})

t.test('R1: invalid configuration stops the server before it listens, naming the variable', async (t) => {
  const child = spawn(process.execPath, [serverFile], { env: { ...baseEnv, JWT_SECRET: 'short', PORT: 'abc' } })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += String(chunk) })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, /JWT_SECRET must NOT have fewer than 32 characters/)
  t.match(stderr, /PORT must be integer/)
})

t.test('R2: NODE_ENV=production without USERS_FILE exits non-zero with a message', async (t) => {
  const child = spawn(process.execPath, [serverFile], { env: { ...baseEnv, JWT_SECRET: TEST_SECRET, PORT: '0', NODE_ENV: 'production' } })
  let output = ''
  child.stdout.on('data', (chunk) => { output += String(chunk) })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(output, /USERS_FILE is required/)
})

async function runCli (file: string, args: string[], stdin: string, env: Record<string, string> = {}): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, '..', 'dist', 'src', 'cli', file), ...args], { env: { ...baseEnv, ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => { stdout += String(chunk) })
  child.stderr.on('data', (chunk) => { stderr += String(chunk) })
  child.stdin.end(stdin)
  const [code] = await once(child, 'exit')
  return { code, stdout, stderr }
}

t.test('R2: hash-password reads standard input and prints a hash that verifies', async (t) => {
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

t.test('npm run migrate creates the schema in DATABASE_URL, and says when there is none', async (t) => {
  const dir = t.testdir()
  const migrated = await runCli('migrate.js', [], '', { DATABASE_URL: `pglite://${dir}` })
  t.equal(migrated.code, 0)
  t.match(migrated.stdout, /The cats schema is up to date/)
  const again = await runCli('migrate.js', [], '', { DATABASE_URL: `pglite://${dir}` })
  t.equal(again.code, 0, 'running it twice is fine')
  const none = await runCli('migrate.js', [], '')
  t.equal(none.code, 1)
  t.match(none.stderr, /DATABASE_URL is not set/)
})
