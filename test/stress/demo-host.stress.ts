import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { randomBytes, scrypt } from 'node:crypto'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { freshKeyPrefix } from '../support/redis.js'
import { hostAddress, plainNode, withoutTapLoader } from '../support/server.js'
import { adminClient, freshSchemaName, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

// A host app of fastify/demo's shape (test/fixtures/demo-host) installed with the packed package in a temporary
// directory, type-checked, run, and used: its own routes, the service under /api/cats-service on the host's accounts,
// its own test suite and its build/close cycles. Needs PostgreSQL (the host keeps its accounts there).

const run = promisify(execFile)
const root = join(import.meta.dirname, '..', '..')
const fixture = join(root, 'test', 'fixtures', 'demo-host')
const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// npm and the host run outside tap's coverage; the npm cache of this machine serves most of the install.
const env = { PATH: process.env.PATH, HOME: process.env.HOME, _TAPJS_PROCESSINFO_COVERAGE_: '0', NO_UPDATE_NOTIFIER: '1' }
const hostSecrets = {
  JWT_SECRET: 'the-host-jwt-secret-of-at-least-32-chars',
  COOKIE_SECRET: 'the-host-cookie-secret-of-at-least-32-chars',
  CATS_SERVICE_JWT_SECRET: 'the-service-jwt-secret-of-at-least-32-chars',
  LOG_LEVEL: 'silent'
}

/** `npm ...` in a directory, without lifecycle scripts (the build is already there). */
async function npm (cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run(...withoutTapLoader('npm', [...args, '--ignore-scripts', '--no-audit', '--no-fund']), { cwd, env, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

/** A password hash in the host's format (fastify/demo's): `<salt hex>.<key hex>`, scrypt N = 2^16, r = 8, p = 2. */
async function hostHash (password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await promisify<string, Buffer, number, { N: number, r: number, p: number, maxmem: number }, Buffer>(scrypt)(
    password, salt, 32, { N: 65_536, r: 8, p: 2, maxmem: 256 * 65_536 * 8 })
  return `${salt.toString('hex')}.${key.toString('hex')}`
}

/** A member of a parsed JSON object (undefined for anything else). */
const field = (value: unknown, key: string): unknown => typeof value === 'object' && value !== null ? Object.getOwnPropertyDescriptor(value, key)?.value : undefined
/** A string member of a parsed JSON object, or ''. */
const text = (value: unknown, key: string): string => { const member = field(value, key); return typeof member === 'string' ? member : '' }
/** A parsed JSON object as a record (empty for anything else). */
const objectOf = (value: unknown): Record<string, unknown> => typeof value === 'object' && value !== null ? Object.fromEntries(Object.entries(value)) : {}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return (sorted[Math.floor((sorted.length - 1) / 2)] + sorted[Math.ceil((sorted.length - 1) / 2)]) / 2
}

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the demo host keeps its accounts in PostgreSQL, so it was skipped')
} else {
  const databaseUrl = TEST_DATABASE_URL
  const dir = mkdtempSync(join(tmpdir(), 'cats-demo-host-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const host = join(dir, 'host')
  cpSync(fixture, host, { recursive: true, filter: (source) => !source.includes('node_modules') })
  const [packed] = JSON.parse(await npm(root, 'pack', '--json', '--pack-destination', dir))
  // The host's own dependencies (its package.json) and the package, from its tarball, as a host installs it.
  await npm(host, 'install', '--prefer-offline', join(dir, packed.filename))
  const tsx = join(host, 'node_modules', '.bin', 'tsx')
  const serviceModule = join(host, 'src', 'cats-service.ts')
  const withService = readFileSync(serviceModule, 'utf8')

  /** tsc --noEmit with the host's tsconfig (strict, skipLibCheck off), TypeScript 5 of this repository: its error lines. */
  async function typeErrors (): Promise<string[]> {
    const output = await run(...plainNode(join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', host), { cwd: host, env })
      .then(({ stdout }) => stdout, (error: { stdout: string }) => error.stdout)
    return output.split('\n').filter((line) => /error TS\d+:/.test(line))
  }

  t.test('the host type-checks, without the service and with it', async (t) => {
    writeFileSync(serviceModule, [
      "import type { FastifyInstance } from 'fastify'",
      '',
      '/** The host before the service: nothing registered. */',
      'export default async function catsServicePlugin (_fastify: FastifyInstance): Promise<void> {}',
      ''
    ].join('\n'))
    const before = await typeErrors()
    writeFileSync(serviceModule, withService)
    const after = await typeErrors()
    t.comment(`tsc errors: ${before.length} without the service, ${after.length} with it`)
    for (const line of after.slice(0, 20)) t.comment(`  ${line}`)
    t.strictSame(before, [], 'the host alone compiles')
    t.strictSame(after, [], 'the host with the service compiles (@fastify/jwt, @fastify/env, its own authenticate, skipLibCheck off)')
  })

  /** Starts the host's server (tsx, as its start script) on a free port of 127.0.0.1; stopped by its PID on teardown. */
  async function startHost (t: Test, hostEnv: Record<string, string>): Promise<string> {
    const child = spawn(...withoutTapLoader(tsx, ['src/server.ts']), { cwd: host, env: { ...env, ...hostSecrets, PORT: '0', ...hostEnv } })
    t.teardown(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      if (child.pid !== undefined) process.kill(child.pid, 'SIGTERM')
      await exited
    })
    return await hostAddress(child, 'the host')
  }

  /** JSON request helper: status and parsed body (undefined when empty). */
  async function call (base: string, path: string, init: { method?: string, body?: unknown, token?: string } = {}): Promise<{ status: number, body: unknown }> {
    const headers: Record<string, string> = {}
    if (init.body !== undefined) headers['content-type'] = 'application/json'
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`
    const response = await fetch(`${base}${path}`, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) })
    const text = await response.text()
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) }
  }

  const admin = await adminClient(t, databaseUrl)
  // The host's tables live in this schema: the connections' default one, where the service would put its objects by default.
  const hostSchema = await freshServerSchema(t, admin, 'demo_host')
  const hostDatabase = urlWithSchema(databaseUrl, hostSchema)
  // The service's own objects go to the schema its DATABASE_SCHEMA setting names.
  const serviceSchema = freshSchemaName('demo_host_cats')
  t.teardown(async () => { await admin.query(`DROP SCHEMA IF EXISTS ${serviceSchema} CASCADE`) })

  const alice = { username: 'alice', password: 'alice-first-password' }
  /** Creates or resets a host account in the host's `users` table (which the host's first start creates). */
  async function putUser (username: string, password: string): Promise<void> {
    await admin.query(
      `INSERT INTO ${hostSchema}.users (email, username, password) VALUES ($1, $2, $3)
       ON CONFLICT (username) DO UPDATE SET password = EXCLUDED.password, updated_at = now()`,
      [`${username}@example.com`, username, await hostHash(password)])
  }

  const stores: Array<{ name: string, env: (t: Test) => Record<string, string> }> = [
    { name: 'memory', env: () => ({}) },
    { name: 'PostgreSQL', env: () => ({ CATS_SERVICE_DATABASE_URL: hostDatabase, CATS_SERVICE_SCHEMA: serviceSchema }) }
  ]
  if (TEST_REDIS_URL !== undefined) {
    const redisUrl = TEST_REDIS_URL
    stores.push({ name: 'Redis', env: (t) => ({ CATS_SERVICE_REDIS_URL: redisUrl, CATS_SERVICE_REDIS_KEY_PREFIX: freshKeyPrefix(t, redisUrl) }) })
  } else {
    t.comment('TEST_REDIS_URL is not set: the service on Redis was skipped')
  }

  for (const store of stores) {
    t.test(`service on ${store.name}: the host's routes, the document, and the service's flows under /api/cats-service`, async (t) => {
      const base = await startHost(t, { DATABASE_URL: hostDatabase, ...store.env(t) })
      await putUser(alice.username, alice.password)

      // The host's own routes answer as without the service.
      const hostLogin = await call(base, '/api/auth/login', { method: 'POST', body: alice })
      t.equal(hostLogin.status, 200, 'the host\'s login')
      t.strictSame(await call(base, '/api/', { token: text(hostLogin.body, 'token') }), { status: 200, body: { message: 'Hello alice!' } }, 'its guarded route, with its own @fastify/jwt')
      t.equal((await call(base, '/api/')).status, 401, 'which refuses a request without a token')
      t.strictSame(await call(base, '/nowhere'), { status: 404, body: { message: 'Not Found' } }, 'the host\'s 404')
      t.equal((await call(base, '/api/auth/login', { method: 'POST', body: { ...alice, password: 'wrong' } })).status, 401, 'a wrong password at the host\'s login')

      const document = await call(base, '/api/docs/json')
      t.equal(document.status, 200, 'the host\'s /api/docs/json')
      const pathItems = objectOf(field(document.body, 'paths'))
      const paths = Object.keys(pathItems)
      const operations = paths.filter((path) => path.startsWith('/api/cats-service/'))
        .flatMap((path) => Object.keys(objectOf(pathItems[path])).map((method) => `${method.toUpperCase()} ${path}`))
      t.comment(`${store.name}: the host's document has ${paths.length} paths, ${operations.length} operations of the service`)
      t.ok(paths.includes('/api/auth/login'), 'the host\'s own operations')
      for (const operation of ['POST /api/cats-service/auth/login', 'GET /api/cats-service/profile', 'POST /api/cats-service/cats', 'GET /api/cats-service/cats/{id}', 'POST /api/cats-service/auth/refresh', 'POST /api/cats-service/auth/logout']) {
        t.ok(operations.includes(operation), `the service's ${operation}`)
      }

      // The service's flows, on the host's account.
      const login = await call(base, '/api/cats-service/auth/login', { method: 'POST', body: alice })
      t.equal(login.status, 200, 'the service\'s login with the host\'s account')
      const token = text(login.body, 'access_token')
      t.match(await call(base, '/api/cats-service/profile', { token }), { status: 200, body: { username: 'alice' } }, '/profile')
      const created = await call(base, '/api/cats-service/cats', { method: 'POST', token, body: { name: 'Tom', age: 3, breed: 'tabby' } })
      t.equal(created.status, 201, 'create a cat')
      const catPath = `/api/cats-service/cats/${String(field(created.body, 'id'))}`
      t.match(await call(base, catPath, { token }), { status: 200, body: { name: 'Tom' } }, 'read it')
      t.match(await call(base, catPath, { method: 'PUT', token, body: { age: 4 } }), { status: 200, body: { age: 4 } }, 'update it')
      t.strictSame(await call(base, catPath, { method: 'DELETE', token }), { status: 200, body: { deleted: true } }, 'delete it')
      const refreshed = await call(base, '/api/cats-service/auth/refresh', { method: 'POST', body: { refresh_token: text(login.body, 'refresh_token') } })
      t.equal(refreshed.status, 200, 'refresh')
      const fresh = text(refreshed.body, 'access_token')
      t.strictSame(await call(base, '/api/reports', { token: fresh }), { status: 200, body: { for: 'alice' } }, 'the host\'s route behind service.guard')
      t.equal((await call(base, '/api/reports', { token: text(hostLogin.body, 'token') })).status, 401, 'which refuses the host\'s own token')
      t.equal((await call(base, '/api/cats-service/auth/logout', { method: 'POST', token: fresh })).status, 204, 'logout')
      t.equal((await call(base, '/api/cats-service/profile', { token: fresh })).status, 401, 'the logged-out token at /profile')
      t.equal((await call(base, '/api/reports', { token: fresh })).status, 401, 'and at the host\'s guarded route')
      t.match(await call(base, '/api/cats-service/nowhere'), { status: 404, body: { code: 'HTTP_ERR_ROUTE_NOT_FOUND' } }, 'the service\'s own 404 under its prefix')
    })
  }

  t.test('the service reads the host\'s accounts at each login: a changed password and a new user count at once', async (t) => {
    const base = await startHost(t, { DATABASE_URL: hostDatabase, CATS_SERVICE_DATABASE_URL: hostDatabase, CATS_SERVICE_SCHEMA: serviceSchema })
    await putUser(alice.username, alice.password)
    t.equal((await call(base, '/api/cats-service/auth/login', { method: 'POST', body: alice })).status, 200, 'before the change')
    await admin.query(`UPDATE ${hostSchema}.users SET password = $2 WHERE username = $1`, [alice.username, await hostHash('alice-second-password')])
    t.equal((await call(base, '/api/cats-service/auth/login', { method: 'POST', body: { username: 'alice', password: 'alice-second-password' } })).status, 200, 'the new password')
    t.equal((await call(base, '/api/cats-service/auth/login', { method: 'POST', body: alice })).status, 401, 'the old one no longer')
    await putUser('carol', 'carol-password')
    t.equal((await call(base, '/api/cats-service/auth/login', { method: 'POST', body: { username: 'carol', password: 'carol-password' } })).status, 200, 'a user created after the start')

    // The host's own tables, in the schema the service would use by default, are untouched.
    const { rows: versions } = await admin.query(`SELECT version FROM ${hostSchema}.schema_migrations ORDER BY version`)
    t.strictSame(versions, [{ version: '20240105120000' }, { version: '20240212093000' }], 'the host\'s schema_migrations')
    const { rows: columns } = await admin.query(
      'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position', [hostSchema, 'sessions'])
    t.strictSame(columns.map((row: { column_name: string }) => row.column_name), ['sid', 'sess', 'expires_at'], 'the host\'s sessions table')
    const { rows: tables } = await admin.query('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [hostSchema])
    t.strictSame(tables.map((row: { table_name: string }) => row.table_name), ['schema_migrations', 'sessions', 'users'], 'nothing of the service beside them')
  })

  t.test('a wrong password takes the same time for unknown and known usernames with the host\'s hashes', async (t) => {
    const base = await startHost(t, { DATABASE_URL: hostDatabase })
    // Both refused (401): what would tell a stranger that a name exists is the time of the refusal. A known name with
    // the right password does more after the hash (a session written, tokens signed), which any caller knowing the
    // password may see. Three known names, so that none reaches the failed-login lock of its pair.
    const known = ['dave', 'erin', 'frank']
    for (const username of known) await putUser(username, `${username}-password`)
    const timed = async (username: string): Promise<number> => {
      const started = performance.now()
      const response = await call(base, '/api/cats-service/auth/login', { method: 'POST', body: { username, password: 'not-the-password' } })
      t.equal(response.status, 401)
      return performance.now() - started
    }
    await timed('nobody') // warm-up
    const knownTimes: number[] = []
    const unknownTimes: number[] = []
    for (let i = 0; i < 21; i++) {
      knownTimes.push(await timed(known[i % known.length]))
      unknownTimes.push(await timed(`nobody-${i}`))
    }
    const [knownMedian, unknownMedian] = [median(knownTimes), median(unknownTimes)]
    const ratio = unknownMedian / knownMedian
    t.comment(`login medians with the host's scrypt hashes: known ${knownMedian.toFixed(1)} ms, unknown ${unknownMedian.toFixed(1)} ms (ratio ${ratio.toFixed(3)})`)
    t.ok(ratio > 0.9 && ratio < 1.1, 'within 10%')
  })

  t.test('the host\'s own test suite passes under its 100 MB under-pressure heap limit', async (t) => {
    t.match(readFileSync(join(host, 'src', 'plugins', 'external', 'under-pressure.ts'), 'utf8'), /maxHeapUsedBytes: 100_000_000,/, 'the limit is demo\'s')
    const suiteSchema = await freshServerSchema(t, admin, 'demo_host_suite')
    const { stdout } = await run(...withoutTapLoader('npm', ['test', '--silent']), {
      cwd: host, env: { ...env, DATABASE_URL: urlWithSchema(databaseUrl, suiteSchema) }, maxBuffer: 16 * 1024 * 1024
    }).catch((error: { stdout: string }) => ({ stdout: error.stdout }))
    const summary = ['tests', 'pass', 'fail'].map((name) => `${name} ${new RegExp(`^# ${name} (\\d+)$`, 'm').exec(stdout)?.[1] ?? '?'}`).join(', ')
    t.comment(`the host's suite (node:test through tsx): ${summary}`)
    for (const line of stdout.split('\n').filter((line) => /^not ok/.test(line))) t.comment(`  ${line}`)
    t.match(stdout, /^# fail 0$/m, 'no failure')
    t.match(stdout, /^# pass [1-9]\d*$/m)
  })

  t.test('the heap after 50 build()/close() cycles of the host is within 5 MB of the heap after 10', async (t) => {
    const cycleSchema = await freshServerSchema(t, admin, 'demo_host_cycles')
    for (const [store, storeEnv] of [['memory', {}], ['PostgreSQL', { CATS_SERVICE_DATABASE_URL: urlWithSchema(databaseUrl, cycleSchema), CATS_SERVICE_SCHEMA: `${cycleSchema}_cats` }]] as const) {
      t.teardown(async () => { await admin.query(`DROP SCHEMA IF EXISTS ${cycleSchema}_cats CASCADE`) })
      const { stdout } = await run(...withoutTapLoader(tsx, ['--expose-gc', 'scripts/build-cycles.ts', '10', '50']), {
        cwd: host, env: { ...env, ...hostSecrets, DATABASE_URL: urlWithSchema(databaseUrl, cycleSchema), ...storeEnv }, maxBuffer: 16 * 1024 * 1024
      })
      const readings: Record<string, number> = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}')
      const growth = readings['50'] - readings['10']
      t.comment(`service on ${store}: heap after 10 cycles ${(readings['10'] / 2 ** 20).toFixed(1)} MiB, after 50 ${(readings['50'] / 2 ** 20).toFixed(1)} MiB (${(growth / 2 ** 20).toFixed(2)} MiB)`)
      t.ok(growth < 5 * 2 ** 20, `service on ${store}: within 5 MB`)
    }
  })
}
