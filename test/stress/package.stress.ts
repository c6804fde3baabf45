import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, normalize } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import semver from 'semver'
import type { Test } from 'tap'
import { TEST_SECRET } from '../support/app.js'
import { freshKeyPrefix } from '../support/redis.js'
import { hostAddress, plainNode, withoutTapLoader } from '../support/server.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

const run = promisify(execFile)
const root = join(import.meta.dirname, '..', '..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
/** The optional peer dependencies: a host installs one only for the setting that needs it. */
const optionalPeers = Object.keys(pkg.peerDependenciesMeta).filter((name) => pkg.peerDependenciesMeta[name].optional === true)
const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// npm and the host app run outside tap's coverage; the npm cache of this machine serves the install.
const env = { PATH: process.env.PATH, HOME: process.env.HOME, _TAPJS_PROCESSINFO_COVERAGE_: '0', NO_UPDATE_NOTIFIER: '1' }

/** `npm ...` in a directory; the build is already there, so no lifecycle script runs (it would rebuild dist/ under other tests). */
async function npm (cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run(...withoutTapLoader('npm', [...args, '--ignore-scripts', '--no-audit', '--no-fund']), { cwd, env, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

// One tarball for the file: its listing is checked, then it is installed into a host app beside it, with fastify
// alone (the memory store); the last test adds the optional peers to the same host.
const dir = mkdtempSync(join(tmpdir(), 'cats-host-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const [packed] = JSON.parse(await npm(root, 'pack', '--json', '--pack-destination', dir))
const packedFiles: string[] = packed.files.map((file: { path: string }) => file.path)
writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'host-app', private: true, type: 'module' }))
await npm(dir, 'install', '--prefer-offline', join(dir, packed.filename), `fastify@${pkg.dependencies.fastify}`)

/** The package a bare specifier names (`node:fs` for a built-in module). */
function packageOf (specifier: string): string {
  return specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/')
}

/** Whether a package name is one of Node's built-in modules. */
const builtin = (name: string): boolean => builtinModules.includes(name.replace(/^node:/, ''))

t.test('the tarball holds the build, README, docs, LICENSE and package.json; no tests, benchmarks, sources or maps', async (t) => {
  const files = packedFiles
  t.comment(`npm pack: ${files.length} files, ${packed.size} bytes packed`)
  t.ok(files.includes('package.json') && files.includes('README.md') && files.includes('LICENSE') && files.includes('docs/configuration.md'))
  for (const entry of ['dist/src/app.js', 'dist/src/app.d.ts', 'dist/src/server.js']) {
    t.ok(files.includes(entry), `ships ${entry}`)
  }
  t.ok(files.some((file) => file.startsWith('dist/plugins/')) && files.some((file) => file.startsWith('dist/routes/')), 'ships the autoloaded plugins and routes')
  t.ok(files.includes('dist/src/db/migrations/001.do.cats.sql'), 'ships the SQL migrations')
  const unexpected = files.filter((file) => !/^(package\.json|README\.md|LICENSE|docs\/[a-z-]+\.md|dist\/(src|plugins|routes)\/.+\.(js|d\.ts)|dist\/src\/db\/migrations\/[0-9]{3}\.do\.[a-z-]+\.sql)$/.test(file))
  t.strictSame(unexpected, [], 'nothing else: no test/, bench/, TypeScript sources or source maps')
  t.equal(pkg.license, 'MIT')
  t.match(readFileSync(join(root, 'LICENSE'), 'utf8'), /^MIT License/)
})

t.test('engines: every package of the lockfile accepts the oldest Node this package declares', async (t) => {
  const oldest = semver.minVersion(pkg.engines.node)
  t.ok(oldest !== null && semver.satisfies(process.version, pkg.engines.node), `Node ${process.version} is within ${pkg.engines.node}`)
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const refusing = Object.entries<{ engines?: { node?: string } }>(lock.packages)
    .filter(([, entry]) => typeof entry.engines?.node === 'string' && !semver.satisfies(oldest ?? '', entry.engines.node))
    .map(([path, entry]) => `${path} (node ${entry.engines?.node})`)
  t.strictSame(refusing, [], `every installed package supports Node ${oldest}`)
})

/** The file of the installed package at a path of the tarball. */
const installed = (file: string): string => join(dir, 'node_modules', pkg.name, file)

t.test('the code imports only the packages the package declares: its dependencies and optional peers', async (t) => {
  const declared = new Set([...Object.keys(pkg.dependencies), ...optionalPeers])
  const imports = /\bfrom\s*['"]([^'"]+)['"]|\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]/gm
  const undeclared = new Set<string>()
  for (const file of packedFiles.filter((file) => file.endsWith('.js'))) {
    for (const [, ...specifiers] of readFileSync(installed(file), 'utf8').matchAll(imports)) {
      const specifier = specifiers.find((found) => found !== undefined) ?? ''
      if (!specifier.startsWith('.') && !declared.has(packageOf(specifier)) && !builtin(packageOf(specifier))) undeclared.add(`${packageOf(specifier)} (${file})`)
    }
  }
  t.strictSame([...undeclared], [])
})

t.test('the type declarations a host reads name only dependencies, none of the optional peers', async (t) => {
  // Every declaration file reachable from an entry point of package.json's exports, as tsc follows them.
  const references = /\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]|\bdeclare\s+module\s+['"]([^'"]+)['"]|<reference\s+types\s*=\s*['"]([^'"]+)['"]/gm
  const entries: string[] = Object.values<{ types?: string }>(pkg.exports).flatMap((entry) => entry.types ?? [])
  const queue = entries.map((entry) => normalize(entry))
  const read = new Set<string>()
  const named = new Set<string>()
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (read.has(file)) continue
    read.add(file)
    if (!packedFiles.includes(file)) continue // reported below
    for (const [, ...specifiers] of readFileSync(installed(file), 'utf8').matchAll(references)) {
      const specifier = specifiers.find((found) => found !== undefined) ?? ''
      if (specifier.startsWith('.')) queue.push(normalize(join(dirname(file), specifier.replace(/\.js$/, '.d.ts'))))
      else named.add(packageOf(specifier))
    }
  }
  t.comment(`${read.size} declaration files reachable; packages they name: ${[...named].sort().join(', ')}`)
  t.strictSame([...read].filter((file) => !packedFiles.includes(file)), [], 'every one is in the tarball')
  t.strictSame([...named].filter((name) => optionalPeers.includes(name)), [], 'no optional peer')
  t.strictSame([...named].filter((name) => !(name in pkg.dependencies) && !builtin(name)), [], 'only what a host installs with the package')
  // A host's own declarations of Fastify's interfaces (its config, authenticate, request.user) stay its own.
  const augmenting = [...read].filter((file) => packedFiles.includes(file) && /\bdeclare\s+module\b/.test(readFileSync(installed(file), 'utf8')))
  t.strictSame(augmenting, [], 'none of them declares anything into another module (Fastify\'s interfaces, FastifyJWT)')
})

/** Starts a compiled host file of the host app; resolves with its address once it listens. */
async function startHost (t: Test, file: string, hostEnv: Record<string, string> = {}): Promise<string> {
  const child = spawn(...plainNode(file), { cwd: dir, env: { ...env, JWT_SECRET: TEST_SECRET, ...hostEnv } })
  t.teardown(() => { child.kill('SIGKILL') })
  return await hostAddress(child, 'host')
}

/** Logs in as john through the service under /api, reads the profile, creates a cat and lists it; returns the token. */
async function serveRequests (t: Test, base: string): Promise<string> {
  const login = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'john', password: 'changeme' })
  })
  t.equal(login.status, 200, 'login under /api')
  const loginBody: unknown = await login.json()
  const token = typeof loginBody === 'object' && loginBody !== null && 'access_token' in loginBody ? String(loginBody.access_token) : ''
  const authorization = `Bearer ${token}`
  const profile = await fetch(`${base}/api/profile`, { headers: { authorization } })
  t.strictSame([profile.status, await profile.json()], [200, { userId: 1, username: 'john' }], 'GET /api/profile')
  const created = await fetch(`${base}/api/cats`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Tom', age: 3, breed: 'tabby' })
  })
  const tom = { id: 1, name: 'Tom', age: 3, breed: 'tabby' }
  t.strictSame([created.status, await created.json()], [201, tom], 'POST /api/cats')
  const cats = await fetch(`${base}/api/cats`)
  t.strictSame([cats.status, await cats.json()], [200, [tom]], 'GET /api/cats')
  return token
}

t.test('installed with fastify alone: no optional peer, the host typechecks and serves from memory', async (t) => {
  t.strictSame(optionalPeers.filter((name) => existsSync(join(dir, 'node_modules', name))), [], 'none of the optional peers is installed')
  const { stdout: size } = await run('du', ['-sk', join(dir, 'node_modules')])
  t.comment(`the host's node_modules: ${size.split('\t')[0]} KiB`)

  // The hosts are TypeScript, strict, compiled against the package's exported types (their own included:
  // skipLibCheck is off), then run. This one serves the service and its guard from memory, beside the host's own declarations of Fastify's interfaces.
  writeFileSync(join(dir, 'host.ts'), `
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { catsService, type Identity } from '${pkg.name}'

// The host's own declarations, as fastify/demo has them: its config, its authenticate and a user of its own.
declare module 'fastify' {
  interface FastifyInstance {
    config: { HOST_DATABASE: string }
    authenticate: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  }
  interface FastifyRequest {
    user: { hostUserId: number } | null
  }
}

const config = { JWT_SECRET: process.env.JWT_SECRET ?? '', LOG_LEVEL: 'silent' }
const host = Fastify()
host.decorate('config', { HOST_DATABASE: 'hosts-own' })
host.decorate('authenticate', async () => {})
host.decorateRequest('user', null)
const service = catsService({ config })
await host.register(service.plugin, { prefix: '/api' })
host.get('/reports', { onRequest: service.guard }, async (request) => {
  const user: Identity = service.identity(request)
  return { for: user.username, host: host.config.HOST_DATABASE }
})
const address: string = await host.listen({ host: '127.0.0.1', port: 0 })
console.log('listening at ' + address)
`)
  // This one turns on, one at a time, each setting that needs an optional peer, and prints how the start ends.
  writeFileSync(join(dir, 'missing-peers.ts'), `
import Fastify from 'fastify'
import catsApi, { type MetricsRegistry } from '${pkg.name}'

const config = { JWT_SECRET: process.env.JWT_SECRET ?? '', LOG_LEVEL: 'silent' }
// Any registry with registerMetric fits the plugin's type; prom-client's is one.
const registry: MetricsRegistry = { registerMetric () {} }
const starts = [
  { config: { ...config, DATABASE_URL: 'postgres://127.0.0.1:1/cats' } },
  { config: { ...config, DATABASE_URL: 'pglite://memory' } },
  { config: { ...config, REDIS_URL: 'redis://127.0.0.1:1' } },
  { config, metrics: { registry } }
]
for (const options of starts) {
  const host = Fastify()
  try {
    await host.register(catsApi, options)
    await host.ready()
    console.log('started')
  } catch (error) {
    console.log(error instanceof Error ? error.message : String(error))
  }
  await host.close()
}
`)
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true,
      target: 'ES2022',
      // A Node host's globals come from @types/node, not from the DOM's declarations (40,000 lines fewer to read).
      lib: ['ES2022'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      skipLibCheck: false,
      types: ['node'],
      typeRoots: [join(root, 'node_modules', '@types')]
    },
    files: ['host.ts', 'missing-peers.ts']
  }))
  // TypeScript 5, as most hosts use today (the build's declarations come from TypeScript 7).
  await run(...plainNode(join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir), { cwd: dir, env })

  const base = await startHost(t, 'host.js')
  const token = await serveRequests(t, base)
  const reports = await fetch(`${base}/reports`, { headers: { authorization: `Bearer ${token}` } })
  t.strictSame([reports.status, await reports.json()], [200, { for: 'john', host: 'hosts-own' }], 'the host route accepts the service token')
  t.equal((await fetch(`${base}/api/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })).status, 204)
  t.equal((await fetch(`${base}/reports`, { headers: { authorization: `Bearer ${token}` } })).status, 401, 'and refuses it once logged out')
  t.equal((await fetch(`${base}/reports`)).status, 401, 'and refuses a request without one')
})

t.test('without the optional peers, a setting that needs one stops the start and says what to install', async (t) => {
  const { stdout } = await run(...plainNode('missing-peers.js'), { cwd: dir, env: { ...env, JWT_SECRET: TEST_SECRET } })
  t.strictSame(stdout.trim().split('\n'), [
    'DATABASE_URL is set, so the pg package is required: npm install pg',
    `DATABASE_URL is a pglite:// URL, so the @electric-sql/pglite package is required: npm install @electric-sql/pglite@${pkg.peerDependencies['@electric-sql/pglite']}`,
    'REDIS_URL is set, so the ioredis package is required: npm install ioredis',
    'the metrics option is given, so the prom-client package is required: npm install prom-client'
  ], 'the plugin, for DATABASE_URL (PostgreSQL, PGlite), REDIS_URL and a metrics registry')

  // The standalone server of the package: one fatal log line and exit code 1, no uncaught error on stderr.
  const server = installed('dist/src/server.js')
  const ended = await run(...plainNode(server), { cwd: dir, env: { ...env, JWT_SECRET: TEST_SECRET, METRICS_ENABLED: 'true', PORT: '0' } })
    .then(() => ({ code: 0, stdout: '', stderr: '' }), (error: { code: number, stdout: string, stderr: string }) => error)
  t.equal(ended.code, 1, 'the server exits with 1')
  const fatal = ended.stdout.trim().split('\n').map((line) => JSON.parse(line)).at(-1)
  t.match(fatal, { level: 60, msg: 'could not start: METRICS_ENABLED is true, so the prom-client package is required: npm install prom-client' })
  t.equal(fatal.err, undefined, 'without a stack: the message says what to do')
  t.equal(ended.stderr, '', 'nothing on stderr')
})

if (TEST_DATABASE_URL === undefined || TEST_REDIS_URL === undefined) {
  t.comment('TEST_DATABASE_URL or TEST_REDIS_URL is not set: the host with PostgreSQL and Redis was skipped')
} else {
  const [databaseUrl, redisUrl] = [TEST_DATABASE_URL, TEST_REDIS_URL]
  t.test('with pg, ioredis and prom-client installed, the host serves from PostgreSQL and Redis and collects metrics', async (t) => {
    await npm(dir, 'install', '--prefer-offline', ...['pg', 'ioredis', 'prom-client'].map((name) => `${name}@${pkg.peerDependencies[name]}`))
    writeFileSync(join(dir, 'host-with-peers.ts'), `
import Fastify from 'fastify'
import { Registry } from 'prom-client'
import catsApi from '${pkg.name}'

// prom-client's own registry, as a host passes it.
const registry = new Registry()
const { JWT_SECRET = '', DATABASE_URL, REDIS_URL, REDIS_KEY_PREFIX } = process.env
const host = Fastify()
await host.register(catsApi, { prefix: '/api', config: { JWT_SECRET, LOG_LEVEL: 'silent', DATABASE_URL, REDIS_URL, REDIS_KEY_PREFIX }, metrics: { registry } })
host.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()))
const address: string = await host.listen({ host: '127.0.0.1', port: 0 })
console.log('listening at ' + address)
`)
    writeFileSync(join(dir, 'tsconfig.peers.json'), JSON.stringify({ extends: './tsconfig.json', files: ['host-with-peers.ts'] }))
    // TypeScript 7 here: the same check in a fraction of TypeScript 5's time.
    await run(...plainNode(join(root, 'node_modules', 'typescript-native', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.peers.json')), { cwd: dir, env })

    const admin = await adminClient(t, databaseUrl)
    const schema = await freshServerSchema(t, admin, 'cats_package')
    const prefix = freshKeyPrefix(t, redisUrl)
    const base = await startHost(t, 'host-with-peers.js', { DATABASE_URL: urlWithSchema(databaseUrl, schema), REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix })
    const token = await serveRequests(t, base)
    const ready = await fetch(`${base}/api/health/ready`)
    t.strictSame([ready.status, await ready.json()], [200, { ready: true }], 'PostgreSQL and Redis are ready')
    t.equal((await fetch(`${base}/api/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })).status, 204, 'logout')

    const { rows } = await admin.query(`SELECT count(*)::integer AS count FROM ${schema}.cats`)
    t.strictSame(rows, [{ count: 1 }], 'the cat is in PostgreSQL')
    const redis = new Redis(redisUrl)
    t.teardown(() => { redis.disconnect() })
    t.not((await redis.keys(`${prefix}*`)).length, 0, 'the logout is in Redis (the denylist)')
    const metrics = await (await fetch(`${base}/metrics`)).text()
    t.match(metrics, /^cats_api_login_attempts_total\{outcome="success"\} 1$/m, 'the login is counted on the host\'s registry')
    t.match(metrics, /^cats_api_cats_stored 1$/m)
  })
}
