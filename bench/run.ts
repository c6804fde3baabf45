/**
 * npm run bench [-- --quick] — builds (the npm script does), then compares the
 * compiled service with the plain node:http baseline over HTTP on 127.0.0.1.
 * See BENCHMARKS.md for the method. Progress goes to stderr, the markdown
 * report to stdout, JSON and the SVG chart to bench/results/.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { createSigner } from 'fast-jwt'
import {
  createCat, JSON_HEADERS, measure, prefill, probe,
  type LoadRequest, type LoadSettings, type Measurement, type Workload
} from './load.js'
import { summarizeProfiles } from './cpu-profile.js'
import { machineInfo, memory, pinProcess, tasksetWorks } from './proc.js'
import {
  compare, markdown, median, ratiosSvg, summarize,
  type BenchReport, type FloodResult, type FloorResult, type FloodSide, type ScalingOp, type ScalingOpResult,
  type ScalingResult, type ScalingStep, type ScenarioResult, type StartupStats
} from './report.js'
import { compileBaseline, startServer, type RunningServer, type ServerKind } from './servers.js'
import { DEFAULT_DATABASE_URL, runStores, STORE_SCENARIOS, storesMarkdown } from './stores.js'

const root = join(import.meta.dirname, '..')
const resultsDir = join(import.meta.dirname, 'results')

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string', default: '50' },
    only: { type: 'string' },
    'log-level': { type: 'string', default: 'warn' },
    'no-pin': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false }
  }
})

if (args.help) {
  console.log(`Usage: npm run bench -- [options]
  --quick            short run (about 4 minutes instead of about 9 on a quiet 2-core machine)
  --rounds N         measured rounds per server and scenario (default 3: A B A B A B)
  --duration S       seconds per measured run (default 3, quick 1.5)
  --connections N    autocannon connections for the throughput scenarios (default 50)
  --only a,b         run only these parts (results are then not written): flood, scaling, stores, floor and the scenario ids
                     profile, profile-bad-token, cat-read, cats-list, cats-list-10k, cat-create, cat-update, login
                     (stores: memory vs PostgreSQL store at env BENCH_DATABASE_URL, default ${DEFAULT_DATABASE_URL})
  --log-level L      LOG_LEVEL of the service (default warn: no per-request logs)
  --no-pin           do not pin the server and the load generator to separate CPUs
  --profile          run both servers under node --cpu-prof in each scenario and print where their CPU time goes
                     (profiling slows it down: results are then not written)`)
  process.exit(0)
}

const quick = args.quick
const mode = {
  rounds: Math.max(1, Number(args.rounds ?? 3)),
  duration: Number(args.duration ?? (quick ? 1.5 : 3)),
  warmup: quick ? 1 : 2,
  connections: Number(args.connections),
  loginAmount: quick ? 6 : 12,
  floodConnections: 50,
  floodSeconds: quick ? 2 : 5,
  scalingSizes: quick ? [1_000, 100_000] : [1_000, 100_000, 1_000_000],
  scalingSeconds: quick ? 1.5 : 2,
  scalingRuns: quick ? 1 : 2,
  /** Seconds the prefill of one scaling size may take at most. */
  prefillBudget: quick ? 60 : 180,
  /** Measurements per run at most, while other processes disturb it (see measureQuiet). */
  attempts: 2
}
const only = args.only === undefined ? undefined : new Set(args.only.split(',').map((part) => part.trim()))
const wanted = (id: string): boolean => only === undefined || only.has(id)

const log = (message: string): void => { process.stderr.write(`${message}\n`) }

if (!existsSync(join(root, 'dist', 'src', 'server.js'))) {
  log('dist/src/server.js is missing: run `npm run build` first (npm run bench does).')
  process.exit(1)
}

compileBaseline(root)

// The server gets CPU 0, this process (the load generator) CPU 1.
const pinned = !args['no-pin'] && tasksetWorks() && pinProcess(process.pid, 1)
const serverCpu = pinned ? 0 : undefined
log(pinned ? 'taskset: servers on CPU 0, load generator on CPU 1' : 'taskset unavailable or disabled: nothing is pinned')
const loadAverageAtStart = os.loadavg()
if (loadAverageAtStart[0] > 0.5) log(`warning: load average is ${loadAverageAtStart[0].toFixed(2)}; other work on the machine skews the numbers`)

const secret = randomBytes(32).toString('hex')
const CATS_MAX = 2_000_000
const ENV: Record<ServerKind, Record<string, string>> = {
  project: {
    JWT_SECRET: secret,
    LOG_LEVEL: args['log-level'],
    CATS_MAX: String(CATS_MAX),
    // The login rate limit would answer 429 to a benchmark; everything else keeps its default.
    LOGIN_RATE_LIMIT_MAX: '1000000000'
  },
  baseline: { JWT_SECRET: secret, CATS_MAX: String(CATS_MAX) },
  floor: { FLOOR_CATS: '1000' }
}

const signToken = (key: string): string =>
  createSigner({ key, algorithm: 'HS256', expiresIn: 3_600_000 })({ sub: 1, username: 'john' })
const goodToken = signToken(secret)
// Well-formed, but signed with another secret: the 401 path after the signature check.
const badToken = signToken(randomBytes(32).toString('hex'))

const profileRequest = (token: string): LoadRequest => ({ method: 'GET', path: '/profile', headers: { authorization: `Bearer ${token}` } })
const loginRequest: LoadRequest = {
  method: 'POST', path: '/auth/login', headers: JSON_HEADERS, body: JSON.stringify({ username: 'john', password: 'changeme' })
}

/** One request per id: 1..n in turn, or `count` ids drawn uniformly from 1..n. */
function perId (template: Omit<LoadRequest, 'path'>, n: number, count?: number): LoadRequest[] {
  const ids = count === undefined
    ? Array.from({ length: n }, (_, index) => index + 1)
    : Array.from({ length: count }, () => 1 + Math.floor(Math.random() * n))
  return ids.map((id) => ({ ...template, path: `/cats/${id}` }))
}

interface Scenario {
  id: string
  title: string
  target: number | undefined
  /** Cats created before the warm-up. */
  cats: number
  /** A fresh workload per server (paths rotate independently). */
  workload: () => Workload
  settings: Partial<LoadSettings>
}

function scenario (id: string, title: string, target: number | undefined, cats: number,
  workload: () => Workload, settings: Partial<LoadSettings> = {}): Scenario {
  return { id, title, target, cats, workload, settings }
}

const updateBody = JSON.stringify({ age: 4, name: 'Felix' })

const scenarios: Scenario[] = [
  scenario('profile', 'GET /profile', 1.15, 0, () => ({ requests: [profileRequest(goodToken)] })),
  scenario('profile-bad-token', 'GET /profile, bad token (401)', 1.15, 0, () => ({ requests: [profileRequest(badToken)] })),
  scenario('cat-read', 'GET /cats/:id (1,000 cats)', 1.15, 1_000, () => ({ requests: perId({ method: 'GET' }, 1_000) })),
  scenario('cats-list', 'GET /cats (100 cats)', 1.0, 100, () => ({ requests: [{ method: 'GET', path: '/cats' }] })),
  scenario('cats-list-10k', 'GET /cats (10,000 cats)', 1.0, 10_000,
    () => ({ requests: [{ method: 'GET', path: '/cats' }] }), { connections: 10 }),
  scenario('cat-create', 'POST /cats', 1.15, 0, () => ({ requests: [createCat] })),
  scenario('cat-update', 'PUT /cats/:id (1,000 cats)', 1.15, 1_000,
    () => ({ requests: perId({ method: 'PUT', headers: JSON_HEADERS, body: updateBody }, 1_000) }))
]

// Bound by scrypt (about 0.3 s of CPU per hash here): a fixed number of logins, all completed.
const loginScenario = scenario('login', 'POST /auth/login', undefined, 0, () => ({ requests: [loginRequest] }), { connections: 2 })

const startups: Record<ServerKind, number[]> = { project: [], baseline: [], floor: [] }

async function start (kind: ServerKind, profileDir?: string, env: Record<string, string> = {}): Promise<RunningServer> {
  const nodeArgs = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
  const server = await startServer(kind, { root, cpu: serverCpu, env: { ...ENV[kind], ...env }, nodeArgs })
  if (profileDir === undefined) startups[kind].push(server.startupMs)
  return server
}

function settingsFor (scenario: Scenario, seconds: number, amount?: number): LoadSettings {
  return {
    connections: mode.connections,
    ...scenario.settings,
    ...(amount === undefined ? { duration: seconds } : { amount }),
    timeout: 30
  }
}

// Other processes on the machine inflate the server's CPU per request (preemption,
// caches): a run during which they used more than this many cores is measured again.
const BUSY_MACHINE = 0.25
let retries = 0

/** measure(), repeated (up to `attempts` times) while other processes disturb it; keeps the least disturbed run. */
async function measureQuiet (server: RunningServer, workload: Workload, settings: LoadSettings, attempts = mode.attempts): Promise<Measurement> {
  let best = await measure(server.pid, server.url, workload, settings)
  for (let attempt = 1; attempt < attempts && best.otherLoad > BUSY_MACHINE; attempt++) {
    retries++
    const again = await measure(server.pid, server.url, workload, settings)
    if (again.otherLoad < best.otherLoad) best = again
  }
  return best
}

const fmt = (m: Measurement): string =>
  `${Math.round(m.reqPerSec).toLocaleString('en-US')} req/s, ${m.cpuMicrosPerRequest.toFixed(1)} µs CPU/req, ` +
  `p99 ${m.latencyP99} ms, busy ${(m.serverBusy * 100).toFixed(0)}%, others ${m.otherLoad.toFixed(2)} CPU` +
  `${m.non2xx > 0 ? `, non-2xx ${m.non2xx}` : ''}`

async function runScenario (scenario: Scenario): Promise<ScenarioResult> {
  const login = scenario.id === 'login'
  const kinds: ServerKind[] = ['project', 'baseline']
  const servers: RunningServer[] = []
  const profileDirs = kinds.map((kind) => args.profile ? mkdtempSync(join(os.tmpdir(), `cats-bench-${kind}-`)) : undefined)
  let skipMs = [0, 0]
  try {
    for (const [index, kind] of kinds.entries()) servers.push(await start(kind, profileDirs[index]))
    const workloads = servers.map(() => scenario.workload())
    for (const server of servers) {
      const filled = await prefill(server.url, scenario.cats)
      if (filled.cats !== scenario.cats) throw new Error(`${server.kind}: prefill created ${filled.cats} of ${scenario.cats} cats`)
      await measure(server.pid, server.url, scenario.workload(), settingsFor(scenario, mode.warmup, login ? 2 : undefined))
    }
    // Profiles leave out start-up, prefill and warm-up.
    skipMs = servers.map((server) => performance.now() - server.spawnedAt)
    const samples: Measurement[][] = [[], []]
    for (let round = 1; round <= mode.rounds; round++) {
      for (const [index, server] of servers.entries()) {
        const result = await measureQuiet(server, workloads[index],
          settingsFor(scenario, mode.duration, login ? mode.loginAmount : undefined))
        samples[index].push(result)
        log(`[${scenario.id}] round ${round} ${server.kind}: ${fmt(result)}`)
      }
    }
    const [project, baseline] = servers.map((server, index) => summarize(samples[index], memory(server.pid).peakRss))
    const result = compare(scenario.id, scenario.title, scenario.target, project, baseline)
    log(`[${scenario.id}] CPU ratio ${result.ratios.cpuPerRequest.toFixed(2)}, req/s ratio ${result.ratios.reqPerSec.toFixed(2)}`)
    return result
  } finally {
    for (const server of servers) await server.stop()
    for (const [index, dir] of profileDirs.entries()) {
      if (dir === undefined) continue
      // A server writes its profile when it exits.
      log(`[${scenario.id}] where the ${kinds[index]}'s CPU time goes (node --cpu-prof, measured rounds only):\n` +
        summarizeProfiles(dir, skipMs[index]))
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

async function floodSide (kind: ServerKind): Promise<FloodSide> {
  const server = await start(kind)
  try {
    const req = profileRequest(goodToken)
    await probe(server.pid, server.url, req, 0.5)
    let idle = await probe(server.pid, server.url, req, mode.floodSeconds)
    if (idle.otherLoad > BUSY_MACHINE) {
      retries++
      const again = await probe(server.pid, server.url, req, mode.floodSeconds)
      if (again.otherLoad < idle.otherLoad) idle = again
    }
    const flooding = measure(server.pid, server.url, { requests: [loginRequest] },
      { connections: mode.floodConnections, duration: mode.floodSeconds + 1, timeout: 60 })
    await sleep(500)
    const flood = await probe(server.pid, server.url, req, mode.floodSeconds)
    const logins = await flooding
    const side: FloodSide = {
      idle,
      flood,
      p99Ratio: idle.p99 === 0 ? 0 : flood.p99 / idle.p99,
      login: { requests: logins.requests, non2xx: logins.non2xx, errors: logins.errors, timeouts: logins.timeouts, statusCodes: logins.statusCodes }
    }
    log(`[flood] ${kind}: idle p99 ${(idle.p99 / 1000).toFixed(2)} ms, flood p99 ${(flood.p99 / 1000).toFixed(2)} ms ` +
      `(x${side.p99Ratio.toFixed(2)}), logins answered ${logins.requests}, non-2xx ${logins.non2xx}`)
    return side
  } finally {
    await server.stop()
  }
}

async function runFlood (): Promise<FloodResult> {
  const project = await floodSide('project')
  const baseline = await floodSide('baseline')
  const target = 3
  return {
    connections: mode.floodConnections, seconds: mode.floodSeconds, project, baseline, target, pass: project.p99Ratio <= target
  }
}

async function scalingOp (server: RunningServer, workload: Workload, settings: LoadSettings): Promise<ScalingOpResult> {
  const runs: Measurement[] = []
  for (let run = 0; run < mode.scalingRuns; run++) runs.push(await measureQuiet(server, workload, settings))
  return {
    cpuMicrosPerRequest: median(runs.map((m) => m.cpuMicrosPerRequest)),
    reqPerSec: median(runs.map((m) => m.reqPerSec)),
    latencyP99: median(runs.map((m) => m.latencyP99)),
    non2xx: runs.reduce((sum, m) => sum + m.non2xx, 0),
    otherLoad: median(runs.map((m) => m.otherLoad))
  }
}

async function runScaling (): Promise<ScalingResult> {
  const server = await start('project')
  try {
    const emptyRss = memory(server.pid).rss
    const steps: ScalingStep[] = []
    let size = 0
    for (const target of mode.scalingSizes) {
      // A time budget keeps the run bounded on a slow or busy machine; the report then shows the size reached.
      const filled = await prefill(server.url, target - size, mode.prefillBudget)
      size += filled.cats
      const { rss } = memory(server.pid)
      log(`[scaling] ${size} cats: prefill ${Math.round(filled.catsPerSec)} cats/s, RSS ${(rss / 2 ** 20).toFixed(0)} MiB` +
        `${size < target ? ` (stopped after ${mode.prefillBudget} s, short of ${target})` : ''}`)
      const settings = (seconds: number): LoadSettings => ({ connections: mode.connections, duration: seconds, timeout: 30 })
      const ops: Record<ScalingOp, () => Workload> = {
        get: () => ({ requests: perId({ method: 'GET' }, size, 1_000) }),
        put: () => ({ requests: perId({ method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ age: 4 }) }, size, 1_000) }),
        // One pipelined connection, strictly alternating: each DELETE removes the newest cat, the POST puts it back.
        delete: () => ({ requests: [{ method: 'DELETE', path: `/cats/${size}` }, createCat] })
      }
      const opSettings: Record<ScalingOp, (seconds: number) => LoadSettings> = {
        get: settings,
        put: settings,
        delete: (seconds) => ({ connections: 1, pipelining: 16, duration: seconds, timeout: 30 })
      }
      if (steps.length === 0) {
        // A longer warm-up than the other scenarios: the first size must not pay for JIT compilation.
        for (const op of ['get', 'put', 'delete'] as const) await measure(server.pid, server.url, ops[op](), opSettings[op](2 * mode.warmup))
      }
      const runOp = async (op: ScalingOp): Promise<ScalingOpResult> => {
        const result = await scalingOp(server, ops[op](), opSettings[op](mode.scalingSeconds))
        log(`[scaling] ${size} cats ${op}: ${result.cpuMicrosPerRequest.toFixed(1)} µs CPU/req, ${Math.round(result.reqPerSec)} req/s, others ${result.otherLoad.toFixed(2)} CPU`)
        return result
      }
      const results = { get: await runOp('get'), put: await runOp('put'), delete: await runOp('delete') }
      const previous = steps.at(-1) ?? { size: 0, rss: emptyRss }
      const marginalRssPerCat = (rss - previous.rss) / (size - previous.size)
      steps.push({ size, prefill: filled, rss, rssPerCat: (rss - emptyRss) / size, marginalRssPerCat, ops: results })
    }
    const spreadOf = (op: ScalingOp): number => {
      const costs = steps.map((step) => step.ops[op].cpuMicrosPerRequest)
      return Math.max(...costs) / Math.min(...costs)
    }
    const spread = { get: spreadOf('get'), put: spreadOf('put'), delete: spreadOf('delete') }
    const target = 1.2
    return { emptyRss, steps, spread, target, pass: { get: spread.get <= target, put: spread.put <= target, delete: spread.delete <= target } }
  } finally {
    await server.stop()
  }
}

/** GET /cats/:id on the baseline, the two floor servers and the project, interleaved round by round. */
async function runFloor (): Promise<FloorResult> {
  const catRead = scenarios.find((s) => s.id === 'cat-read')
  if (catRead === undefined) throw new Error('no cat-read scenario')
  const servers: RunningServer[] = []
  try {
    servers.push(await start('baseline'), await start('floor', undefined, { FLOOR_HEADERS: '0' }),
      await start('floor', undefined, { FLOOR_HEADERS: '1' }), await start('project'))
    for (const server of [servers[0], servers[3]]) await prefill(server.url, catRead.cats)
    for (const server of servers) await measure(server.pid, server.url, catRead.workload(), settingsFor(catRead, mode.warmup))
    const samples: Measurement[][] = servers.map(() => [])
    for (let round = 1; round <= mode.rounds; round++) {
      for (const [index, server] of servers.entries()) {
        samples[index].push(await measureQuiet(server, catRead.workload(), settingsFor(catRead, mode.duration)))
        log(`[floor] round ${round} server ${index + 1} of 4: ${fmt(samples[index].at(-1) as Measurement)}`)
      }
    }
    const [baseline, bare, headers, project] = servers.map((server, index) => summarize(samples[index], memory(server.pid).peakRss))
    return { title: catRead.title, baseline, bare, headers, project }
  } finally {
    for (const server of servers) await server.stop()
  }
}

function startupStats (samples: number[]): StartupStats {
  return {
    samples: samples.map((ms) => Math.round(ms * 10) / 10),
    median: median(samples),
    min: samples.length === 0 ? 0 : Math.min(...samples),
    max: samples.length === 0 ? 0 : Math.max(...samples)
  }
}

const started = Date.now()
const results: ScenarioResult[] = []
for (const scenario of scenarios) {
  if (wanted(scenario.id)) results.push(await runScenario(scenario))
}
const login = wanted(loginScenario.id) ? await runScenario(loginScenario) : undefined
const flood = wanted('flood') ? await runFlood() : undefined
const scaling = wanted('scaling') ? await runScaling() : undefined
const floor = wanted('floor') ? await runFloor() : undefined
const stores = wanted('stores')
  ? await runStores({
    databaseUrl: process.env.BENCH_DATABASE_URL ?? DEFAULT_DATABASE_URL,
    scenarios: scenarios.filter((s) => STORE_SCENARIOS.includes(s.id)),
    rounds: mode.rounds,
    warmup: mode.warmup,
    duration: mode.duration,
    settings: (s, seconds) => ({ connections: mode.connections, ...s.settings, duration: seconds, timeout: 30 }),
    start: (env) => startServer('project', { root, cpu: serverCpu, env: { ...ENV.project, ...env } }),
    measure: measureQuiet,
    log
  })
  : undefined
if (startups.project.length < 3) {
  // Start-up is reported from every server start; make sure there are a few.
  for (let i = 0; i < 3; i++) await (await start('project')).stop()
}
const project = startupStats(startups.project)
const startupTarget = 300

const report: BenchReport = {
  generatedAt: new Date().toISOString(),
  mode: quick ? 'quick' : 'full',
  machine: machineInfo(),
  loadAverageAtStart: loadAverageAtStart.map((l) => Math.round(l * 100) / 100),
  settings: {
    pinned,
    rounds: mode.rounds,
    secondsPerRun: mode.duration,
    warmupSeconds: mode.warmup,
    connections: mode.connections,
    loginRequestsPerRun: mode.loginAmount,
    projectLogLevel: args['log-level'],
    catsMax: CATS_MAX,
    loginRateLimitMax: ENV.project.LOGIN_RATE_LIMIT_MAX,
    remeasuredBusyRuns: retries,
    scalingPrefillBudgetSeconds: mode.prefillBudget,
    totalSeconds: Math.round((Date.now() - started) / 1000)
  },
  scenarios: results,
  login,
  flood,
  scaling,
  stores,
  floor,
  startup: { project, baseline: startupStats(startups.baseline), target: startupTarget, pass: project.median < startupTarget }
}

const tables = markdown(report) + (stores === undefined ? '' : `\n${storesMarkdown(stores)}\n`)
process.stdout.write(tables)
if (only === undefined && !args.profile) {
  mkdirSync(resultsDir, { recursive: true })
  const write = (path: string, content: string): void => {
    writeFileSync(`${path}.tmp`, content)
    renameSync(`${path}.tmp`, path)
  }
  write(join(resultsDir, 'latest.json'), JSON.stringify(report, null, 2) + '\n')
  write(join(resultsDir, 'ratios.svg'), ratiosSvg(report))
  // BENCHMARKS.md shows the latest tables between these markers.
  const docPath = join(root, 'BENCHMARKS.md')
  const [begin, end] = ['<!-- bench:results:start -->', '<!-- bench:results:end -->']
  const doc = existsSync(docPath) ? readFileSync(docPath, 'utf8') : ''
  const from = doc.indexOf(begin)
  const to = doc.indexOf(end)
  if (from !== -1 && to > from) write(docPath, `${doc.slice(0, from + begin.length)}\n\n${tables}\n${doc.slice(to)}`)
  log(`wrote bench/results/latest.json, bench/results/ratios.svg${from !== -1 && to > from ? ' and the tables in BENCHMARKS.md' : ''}`)
} else {
  log('--only or --profile: results not written')
}
