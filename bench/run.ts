/**
 * npm run bench [-- --quick] — builds (the npm script does), then compares the
 * compiled service with the plain node:http baseline over HTTP on 127.0.0.1.
 * See BENCHMARKS.md for the method. Progress goes to stderr, the markdown
 * report to stdout, JSON and the SVG chart to bench/results/.
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { runFloor } from './floor.js'
import { runFlood } from './flood.js'
import { CATS_MAX, createHarness } from './harness.js'
import { parseOptions, USAGE, warmupBefore } from './options.js'
import { machineInfo, pinProcess, tasksetWorks } from './proc.js'
import { markdown, startupStats, type BenchReport, type ScenarioResult } from './report.js'
import { runScaling } from './scaling.js'
import { findScenario, loginScenario, throughputScenarios } from './scenarios.js'
import { compileBaseline } from './servers.js'
import { DEFAULT_DATABASE_URL, runStores, STORE_SCENARIOS, storesMarkdown } from './stores.js'
import { runScenario } from './throughput.js'
import { writeResults } from './write-results.js'

const root = join(import.meta.dirname, '..')

const options = parseOptions()
if (options.help) {
  console.log(USAGE)
  process.exit(0)
}
const { mode, only } = options
const wanted = (id: string): boolean => only === undefined || only.has(id)

const log = (message: string): void => { process.stderr.write(`${message}\n`) }

if (!existsSync(join(root, 'dist', 'server', 'src', 'server.js'))) {
  log('dist/server/src/server.js is missing: run `npm run build` first (npm run bench does).')
  process.exit(1)
}

compileBaseline(root)

// The server gets CPU 0, this process (the load generator) CPU 1.
const pinned = options.pin && tasksetWorks() && pinProcess(process.pid, 1)
log(pinned ? 'taskset: servers on CPU 0, load generator on CPU 1' : 'taskset unavailable or disabled: nothing is pinned')
const loadAverageAtStart = os.loadavg()
if (loadAverageAtStart[0] > 0.5) log(`warning: load average is ${loadAverageAtStart[0].toFixed(2)}; other work on the machine skews the numbers`)

const secret = randomBytes(32).toString('hex')
const bench = createHarness({ root, mode, logLevel: options.logLevel, serverCpu: pinned ? 0 : undefined, secret, log })
const scenarios = throughputScenarios(secret)

const started = Date.now()
const results: ScenarioResult[] = []
for (const scenario of scenarios) {
  if (wanted(scenario.id)) results.push(await runScenario(bench, scenario, options.profile))
}
const login = wanted(loginScenario.id) ? await runScenario(bench, loginScenario, options.profile) : undefined
const flood = wanted('flood') ? await runFlood(bench, secret) : undefined
const scaling = wanted('scaling') ? await runScaling(bench) : undefined
const floors = []
if (wanted('floor')) {
  for (const id of ['profile', 'cat-read', 'cat-create', 'cat-update']) floors.push(await runFloor(bench, findScenario(scenarios, id)))
}
// `stores` runs every store scenario; `stores:<id>` only those named.
const storeIds = [...only ?? []].filter((part) => part.startsWith('stores:')).map((part) => part.slice('stores:'.length))
const stores = wanted('stores') || storeIds.length > 0
  ? await runStores({
    databaseUrl: process.env.BENCH_DATABASE_URL ?? DEFAULT_DATABASE_URL,
    scenarios: scenarios.filter((s) => s.id in STORE_SCENARIOS && (storeIds.length === 0 || storeIds.includes(s.id))),
    // One start per store, measured as many times as a server of the other groups over its starts.
    rounds: mode.starts * mode.rounds,
    warmupBefore: (round) => warmupBefore(mode, round),
    duration: mode.duration,
    settings: (s, seconds) => bench.settings(seconds, s.settings),
    // Start-up is reported from the in-memory servers of the other groups only.
    start: (env) => bench.start('project', { env, countStartup: false }),
    measure: bench.measureQuiet,
    log
  })
  : undefined
// Start-up is reported from every counted server start; a run with few (--only) starts both servers in turn
// until each has STARTUP_STARTS, so the median does not rest on one or two starts.
const STARTUP_STARTS = 9
while (bench.startups.project.length < STARTUP_STARTS || bench.startups.baseline.length < STARTUP_STARTS) {
  for (const kind of ['project', 'baseline'] as const) {
    if (bench.startups[kind].length < STARTUP_STARTS) await (await bench.start(kind)).stop()
  }
}
const project = startupStats(bench.startups.project)
// Milliseconds, at most, for the median start of the service.
const startupTarget = 400

const report: BenchReport = {
  generatedAt: new Date().toISOString(),
  mode: options.quick ? 'quick' : 'full',
  machine: machineInfo(),
  loadAverageAtStart: loadAverageAtStart.map((l) => Math.round(l * 100) / 100),
  settings: {
    pinned,
    starts: mode.starts,
    floorStarts: mode.floorStarts,
    rounds: mode.rounds,
    secondsPerRun: mode.duration,
    warmupSeconds: mode.warmup,
    leadInSeconds: mode.leadIn,
    connections: mode.connections,
    loginRequestsPerRun: mode.loginAmount,
    projectLogLevel: options.logLevel,
    catsMax: CATS_MAX,
    remeasuredBusyRuns: bench.remeasured(),
    scalingPrefillBudgetSeconds: mode.prefillBudget,
    totalSeconds: Math.round((Date.now() - started) / 1000)
  },
  scenarios: results,
  login,
  flood,
  scaling,
  stores,
  floors,
  startup: { project, baseline: startupStats(bench.startups.baseline), target: startupTarget, pass: project.median <= startupTarget }
}

const tables = markdown(report) + (stores === undefined ? '' : `\n${storesMarkdown(stores)}\n`)
process.stdout.write(tables)
if (only === undefined && !options.profile) {
  log(writeResults(root, report, tables))
} else {
  log('--only or --profile: results not written')
}
