import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import semver from 'semver'
import { TEST_SECRET } from './support/app.js'
import { plainNode, withoutTapLoader } from './support/server.js'

const run = promisify(execFile)
const root = join(import.meta.dirname, '..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
// npm and the host app run outside tap's coverage; the npm cache of this machine serves the install.
const env = { PATH: process.env.PATH, HOME: process.env.HOME, _TAPJS_PROCESSINFO_COVERAGE_: '0', NO_UPDATE_NOTIFIER: '1' }

/** `npm ...` in a directory; the build is already there, so no lifecycle script runs (it would rebuild dist/ under other tests). */
async function npm (cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run(...withoutTapLoader('npm', [...args, '--ignore-scripts', '--no-audit', '--no-fund']), { cwd, env, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

// One tarball for the file: its listing is checked, then it is installed into a host app beside it.
const dir = mkdtempSync(join(tmpdir(), 'cats-host-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const [packed] = JSON.parse(await npm(root, 'pack', '--json', '--pack-destination', dir))

t.test('the tarball holds the build, README, docs, LICENSE and package.json; no tests, benchmarks, sources or maps', async (t) => {
  const files: string[] = packed.files.map((file: { path: string }) => file.path)
  t.comment(`npm pack: ${files.length} files, ${packed.size} bytes packed`)
  t.ok(files.includes('package.json') && files.includes('README.md') && files.includes('LICENSE') && files.includes('docs/configuration.md'))
  for (const entry of ['dist/src/app.js', 'dist/src/app.d.ts', 'dist/src/token-guard-plugin.js', 'dist/src/token-guard-plugin.d.ts', 'dist/src/server.js']) {
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

t.test('installed from the tarball into a host app outside the repository, the plugin and its guard work', async (t) => {
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'host-app', private: true, type: 'module' }))
  await npm(dir, 'install', '--prefer-offline', join(dir, packed.filename), `fastify@${pkg.dependencies.fastify}`)

  // The host is TypeScript, strict, compiled against the package's exported types, then run.
  writeFileSync(join(dir, 'host.ts'), `
import Fastify from 'fastify'
import catsApi from '${pkg.name}'
import tokenGuard from '${pkg.name}/token-guard'
import tokenGuardByItsEarlierName from '${pkg.name}/auth'
if (tokenGuardByItsEarlierName !== tokenGuard) throw new Error('./auth is not the token guard')

const config = { JWT_SECRET: process.env.JWT_SECRET ?? '', LOG_LEVEL: 'silent' }
const host = Fastify()
await host.register(catsApi, { prefix: '/api', config })
await host.register(async (scope) => {
  await scope.register(tokenGuard, { config })
  scope.get('/reports', { onRequest: scope.authenticate }, async (request) => ({ for: request.user.username }))
})
const address: string = await host.listen({ host: '127.0.0.1', port: 0 })
console.log('listening at ' + address)
`)
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true,
      target: 'ES2022',
      // A Node host's globals come from @types/node, not from the DOM's declarations (40,000 lines fewer to read).
      lib: ['ES2022'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      skipLibCheck: true,
      types: ['node'],
      typeRoots: [join(root, 'node_modules', '@types')]
    },
    files: ['host.ts']
  }))
  await run(...plainNode(join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir), { cwd: dir, env })
  const child = spawn(...plainNode('host.js'), { cwd: dir, env: { ...env, JWT_SECRET: TEST_SECRET } })
  t.teardown(() => { child.kill('SIGKILL') })
  let output = ''
  child.stderr.on('data', (chunk) => { output += String(chunk) })
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += String(chunk)
      const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match !== null) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`host exited with ${code}: ${output}`)))
  })

  const login = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'john', password: 'changeme' })
  })
  t.equal(login.status, 200, 'login under /api')
  const loginBody: unknown = await login.json()
  const token = typeof loginBody === 'object' && loginBody !== null && 'access_token' in loginBody ? String(loginBody.access_token) : ''
  const cats = await fetch(`${base}/api/cats`)
  t.strictSame([cats.status, await cats.json()], [200, []], 'GET /api/cats')
  const reports = await fetch(`${base}/reports`, { headers: { authorization: `Bearer ${token}` } })
  t.strictSame([reports.status, await reports.json()], [200, { for: 'john' }], 'the host route accepts the service token')
  t.equal((await fetch(`${base}/reports`)).status, 401, 'and refuses a request without one')
})
