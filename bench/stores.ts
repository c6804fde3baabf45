/**
 * The stores side by side: the same compiled service three times, its cats in
 * memory (no DATABASE_URL), in PostgreSQL (a fresh schema per scenario) and in
 * PGlite (a fresh directory per scenario), interleaved round by round. The
 * database stores are reported as ratios to memory; GET and PUT of one cat have
 * a target for PostgreSQL.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { prefill, type LoadSettings, type Measurement, type Workload } from './load.js'
import { memory, postgresCpuSeconds } from './proc.js'
import { median, summarize, table, type SideSummary } from './report.js'
import type { RunningServer } from './servers.js'

/**
 * The scenarios of run.ts that this group repeats on every store, with their target: the most server CPU per
 * request PostgreSQL may cost, as a multiple of memory's (undefined: none).
 */
export const STORE_SCENARIOS: Record<string, number | undefined> = {
  'cat-read': 2,
  'cats-list': undefined,
  'cat-create': undefined,
  'cat-update': 2
}

export const DEFAULT_DATABASE_URL = 'postgres://root@127.0.0.1:5432/test'

const DATABASE_STORES = ['postgres', 'pglite'] as const
type DatabaseStore = typeof DATABASE_STORES[number]
type StoreName = 'memory' | DatabaseStore

export interface StoreScenario {
  id: string
  title: string
  /** Cats created before the warm-up. */
  cats: number
  workload: () => Workload
  settings: Partial<LoadSettings>
}

export interface StoresContext {
  databaseUrl: string
  scenarios: StoreScenario[]
  rounds: number
  /** Seconds of warm-up right before a store's run of this round (1 for the first). */
  warmupBefore: (round: number) => number
  /** Seconds of each measured run. */
  duration: number
  settings: (scenario: StoreScenario, seconds: number) => LoadSettings
  /** Starts the project server with these extra env variables. */
  start: (env: Record<string, string>) => Promise<RunningServer>
  measure: (server: RunningServer, workload: Workload, settings: LoadSettings, attempts?: number) => Promise<Measurement>
  log: (message: string) => void
}

export interface StoreSide extends SideSummary {
  /**
   * CPU of the PostgreSQL backends that served the service, µs per request (median of the rounds); undefined
   * where there are none (memory, PGlite: its database runs inside the server) or they are not processes of this
   * machine.
   */
  databaseCpuMicrosPerRequest: number | undefined
  /** CPU of all other processes per request, µs (median of the rounds): the database's included, and noise. */
  otherCpuMicrosPerRequest: number
}

/** A database store / memory. */
export interface StoreRatios { reqPerSec: number, cpuPerRequest: number, latencyP99: number }

export interface StoreScenarioResult {
  id: string
  title: string
  /** Highest allowed server CPU ratio of PostgreSQL to memory; undefined: none. */
  target: number | undefined
  memory: StoreSide
  postgres: StoreSide
  pglite: StoreSide
  ratios: Record<DatabaseStore, StoreRatios>
  /** Whether PostgreSQL met the target; undefined without one. */
  pass: boolean | undefined
}

export type StoresResult =
  | { skipped: false, database: string, scenarios: StoreScenarioResult[] }
  | { skipped: true, database: string, reason: string }

/** The URL without its password, for the report. */
function redact (url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.toString()
  } catch {
    return '(unparsable URL)'
  }
}

/** One short-lived connection (not the service's pool): SELECT 1, schema DDL, the backends of the service. */
async function sql (url: string, statement: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000, query_timeout: 30_000 })
  client.on('error', () => {})
  try {
    await client.connect()
    return (await client.query(statement, params)).rows
  } finally {
    await client.end().catch(() => {})
  }
}

/** DATABASE_URL for the service: the same database, with search_path set to `schema` by the startup options. */
export function withSchema (url: string, schema: string): string {
  const options = `options=${encodeURIComponent(`-c search_path=${schema}`)}`
  return `${url}${url.includes('?') ? '&' : '?'}${options}`
}

/** CPU seconds used so far by each backend of the connections named `applicationName` (the service's pool). */
async function backendsCpuSeconds (url: string, applicationName: string): Promise<Map<number, number> | undefined> {
  const rows = await sql(url, 'SELECT pid FROM pg_stat_activity WHERE application_name = $1', [applicationName])
  return postgresCpuSeconds(rows.map((row) => Number(row.pid)))
}

/**
 * The CPU the backends used between two readings: a backend that began meanwhile counts from zero. One that ended
 * meanwhile is missed, but the pool keeps its connections while the load runs.
 */
function backendsCpuBetween (before: Map<number, number> | undefined, after: Map<number, number> | undefined): number | undefined {
  if (before === undefined || after === undefined || after.size === 0) return undefined
  let total = 0
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0)
  return total
}

const ratio = (a: number, b: number): number => (b === 0 ? 0 : a / b)
const perRequest = (cpuSeconds: number, m: Measurement): number => m.requests > 0 ? cpuSeconds / m.requests * 1e6 : 0

interface Sample {
  measurement: Measurement
  /** CPU seconds of the database's backends during the run. */
  databaseCpu: number | undefined
}

function side (samples: Sample[], peakRss: number): StoreSide {
  const measurements = samples.map((sample) => sample.measurement)
  const database = samples.map((sample) => sample.databaseCpu === undefined ? undefined : perRequest(sample.databaseCpu, sample.measurement))
  return {
    ...summarize(measurements, peakRss),
    databaseCpuMicrosPerRequest: database.every((value) => value !== undefined) && database.length > 0 ? median(database) : undefined,
    otherCpuMicrosPerRequest: median(measurements.map((m) => perRequest(m.otherLoad * m.seconds, m)))
  }
}

const ratiosOf = (store: StoreSide, reference: StoreSide): StoreRatios => ({
  reqPerSec: ratio(store.reqPerSec, reference.reqPerSec),
  cpuPerRequest: ratio(store.cpuMicrosPerRequest, reference.cpuMicrosPerRequest),
  latencyP99: ratio(store.latencyP99, reference.latencyP99)
})

async function runScenario (context: StoresContext, scenario: StoreScenario): Promise<StoreScenarioResult> {
  const schema = `bench_${randomBytes(6).toString('hex')}`
  const pgliteDir = mkdtempSync(join(os.tmpdir(), 'cats-bench-pglite-'))
  await sql(context.databaseUrl, `CREATE SCHEMA ${schema}`)
  const databaseUrl = `${withSchema(context.databaseUrl, schema)}&application_name=${schema}`
  const names: StoreName[] = ['memory', 'postgres', 'pglite']
  const servers: RunningServer[] = []
  try {
    // The service creates its tables at start-up (migrations).
    servers.push(await context.start({}))
    servers.push(await context.start({ DATABASE_URL: databaseUrl }))
    servers.push(await context.start({ DATABASE_URL: `pglite://${pgliteDir}` }))
    const workloads = servers.map(() => scenario.workload())
    for (const [index, server] of servers.entries()) {
      const filled = await prefill(server.url, scenario.cats)
      if (filled.cats !== scenario.cats) throw new Error(`${names[index]}: prefill created ${filled.cats} of ${scenario.cats} cats`)
    }
    const samples: Sample[][] = servers.map(() => [])
    for (let round = 1; round <= context.rounds; round++) {
      for (const [index, server] of servers.entries()) {
        // Right before each run, so that no store is measured after idling while the others ran.
        await context.measure(server, scenario.workload(), context.settings(scenario, context.warmupBefore(round)), 1)
        const postgres = names[index] === 'postgres'
        const before = postgres ? await backendsCpuSeconds(context.databaseUrl, schema) : undefined
        // PostgreSQL's own CPU counts as "other processes": measuring again would not make it go away.
        const measurement = await context.measure(server, workloads[index], context.settings(scenario, context.duration), postgres ? 1 : undefined)
        const after = postgres ? await backendsCpuSeconds(context.databaseUrl, schema) : undefined
        const databaseCpu = backendsCpuBetween(before, after)
        samples[index].push({ measurement, databaseCpu })
        context.log(`[stores ${scenario.id}] round ${round} ${names[index]}: ${Math.round(measurement.reqPerSec)} req/s, ` +
          `${measurement.cpuMicrosPerRequest.toFixed(1)} µs CPU/req, p99 ${measurement.latencyP99} ms, ` +
          `${databaseCpu === undefined ? '' : `database ${perRequest(databaseCpu, measurement).toFixed(1)} µs CPU/req, `}` +
          `others ${measurement.otherLoad.toFixed(2)} CPU${measurement.non2xx > 0 ? `, non-2xx ${measurement.non2xx}` : ''}`)
      }
    }
    const [memorySide, postgresSide, pgliteSide] = servers.map((server, index) => side(samples[index], memory(server.pid).peakRss))
    const ratios = { postgres: ratiosOf(postgresSide, memorySide), pglite: ratiosOf(pgliteSide, memorySide) }
    const target = STORE_SCENARIOS[scenario.id]
    context.log(`[stores ${scenario.id}] server CPU / memory: postgres ${ratios.postgres.cpuPerRequest.toFixed(2)}` +
      `${target === undefined ? '' : ` (target ≤ ${target})`}, pglite ${ratios.pglite.cpuPerRequest.toFixed(2)}`)
    return {
      id: scenario.id,
      title: scenario.title,
      target,
      memory: memorySide,
      postgres: postgresSide,
      pglite: pgliteSide,
      ratios,
      pass: target === undefined ? undefined : ratios.postgres.cpuPerRequest <= target
    }
  } finally {
    for (const server of servers) await server.stop()
    await sql(context.databaseUrl, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    rmSync(pgliteDir, { recursive: true, force: true })
  }
}

/** Runs the group, or reports it skipped when PostgreSQL does not answer SELECT 1. */
export async function runStores (context: StoresContext): Promise<StoresResult> {
  const database = redact(context.databaseUrl)
  try {
    await sql(context.databaseUrl, 'SELECT 1')
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    context.log(`Store comparison skipped: PostgreSQL not reachable at ${database} (${reason})`)
    return { skipped: true, database, reason }
  }
  const scenarios: StoreScenarioResult[] = []
  for (const scenario of context.scenarios) scenarios.push(await runScenario(context, scenario))
  return { skipped: false, database, scenarios }
}

const int = (n: number): string => Math.round(n).toLocaleString('en-US')
const micros = (n: number | undefined): string => n === undefined ? '—' : n.toFixed(1)

/** The group's section of the report. */
export function storesMarkdown (result: StoresResult): string {
  const heading = '### Memory, PostgreSQL and PGlite stores'
  if (result.skipped) {
    return `${heading}\n\nStore comparison skipped: PostgreSQL not reachable at ${result.database} (${result.reason}).`
  }
  const rows = result.scenarios.flatMap((s) => (['memory', ...DATABASE_STORES] as const).map((name) => {
    const store = s[name]
    const ratios = name === 'memory' ? undefined : s.ratios[name]
    const target = name === 'postgres' && s.target !== undefined ? `≤ ${s.target}: ${s.pass === true ? 'pass' : 'FAIL'}` : ''
    return [
      name === 'memory' ? s.title : '', name,
      int(store.reqPerSec), ratios === undefined ? '' : ratios.reqPerSec.toFixed(2),
      `${store.latencyP50} / ${store.latencyP99}`, int(store.non2xx),
      micros(store.cpuMicrosPerRequest), ratios === undefined ? '' : ratios.cpuPerRequest.toFixed(2), target,
      name === 'pglite' ? 'in server CPU' : micros(store.databaseCpuMicrosPerRequest), micros(store.otherCpuMicrosPerRequest)
    ]
  }))
  return `${heading}\n\n` +
    `The same compiled service, its cats in memory, in PostgreSQL (${result.database}, a fresh schema per scenario) or in ` +
    'PGlite (a fresh directory per scenario, fsync on); ratios = store / memory, medians of the rounds. ' +
    'Server CPU is the service process only. PostgreSQL runs in other processes: its CPU is the database CPU column ' +
    '(the backends of the service\'s connections), not the server CPU, while req/s and latency include the round trips. ' +
    'PGlite runs inside the service, so its server CPU includes the database. Other CPU is what every other process ' +
    'of the machine used per request: the database\'s included, and whatever else ran. Target: PostgreSQL\'s server CPU ' +
    'ratio, where given.\n\n' +
    table(['Scenario', 'store', 'req/s', 'req/s ratio', 'p50 / p99 ms', 'non-2xx', 'server CPU µs/req', 'server CPU ratio',
      'target', 'database CPU µs/req', 'other CPU µs/req'], rows)
}
