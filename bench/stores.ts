/**
 * Memory vs PostgreSQL store: the same compiled service twice, once with its
 * cats in memory (no DATABASE_URL) and once in PostgreSQL (a fresh schema per
 * scenario), interleaved A B A B. No target: the ratio is reported as it is.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { prefill, type LoadSettings, type Measurement, type Workload } from './load.js'
import { memory } from './proc.js'
import { median, summarize, table, type SideSummary } from './report.js'
import type { RunningServer } from './servers.js'

/** The scenarios of run.ts that this group repeats on both stores. */
export const STORE_SCENARIOS = ['cat-read', 'cats-list', 'cat-create', 'cat-update']

export const DEFAULT_DATABASE_URL = 'postgres://root@127.0.0.1:5432/test'

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
  /** Seconds of warm-up and of each measured run. */
  warmup: number
  duration: number
  settings: (scenario: StoreScenario, seconds: number) => LoadSettings
  /** Starts the project server with these extra env variables. */
  start: (env: Record<string, string>) => Promise<RunningServer>
  measure: (server: RunningServer, workload: Workload, settings: LoadSettings, attempts?: number) => Promise<Measurement>
  log: (message: string) => void
}

export interface StoreSide extends SideSummary {
  /**
   * CPU of all other processes per request, µs (median of the rounds): on the
   * PostgreSQL side mostly the database's backends, on the memory side noise.
   */
  otherCpuMicrosPerRequest: number
}

export interface StoreScenarioResult {
  id: string
  title: string
  memory: StoreSide
  postgres: StoreSide
  /** postgres / memory */
  ratios: { reqPerSec: number, cpuPerRequest: number, latencyP99: number }
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

/** One short-lived connection (not the service's pool): SELECT 1, schema DDL. */
async function sql (url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000, query_timeout: 30_000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query(statement)
  } finally {
    await client.end().catch(() => {})
  }
}

/** DATABASE_URL for the service: the same database, with search_path set to `schema` by the startup options. */
export function withSchema (url: string, schema: string): string {
  const options = `options=${encodeURIComponent(`-c search_path=${schema}`)}`
  return `${url}${url.includes('?') ? '&' : '?'}${options}`
}

const ratio = (a: number, b: number): number => (b === 0 ? 0 : a / b)

function side (samples: Measurement[], peakRss: number): StoreSide {
  const others = samples.map((m) => m.requests > 0 ? m.otherLoad * m.seconds / m.requests * 1e6 : 0)
  return { ...summarize(samples, peakRss), otherCpuMicrosPerRequest: median(others) }
}

async function runScenario (context: StoresContext, scenario: StoreScenario): Promise<StoreScenarioResult> {
  const schema = `bench_${randomBytes(6).toString('hex')}`
  await sql(context.databaseUrl, `CREATE SCHEMA ${schema}`)
  const servers: RunningServer[] = []
  try {
    // The service creates its tables in the schema at start-up (idempotent migration).
    servers.push(await context.start({}))
    servers.push(await context.start({ DATABASE_URL: withSchema(context.databaseUrl, schema) }))
    const names = ['memory', 'postgres']
    const workloads = servers.map(() => scenario.workload())
    for (const [index, server] of servers.entries()) {
      const filled = await prefill(server.url, scenario.cats)
      if (filled.cats !== scenario.cats) throw new Error(`${names[index]}: prefill created ${filled.cats} of ${scenario.cats} cats`)
      await context.measure(server, scenario.workload(), context.settings(scenario, context.warmup), 1)
    }
    const samples: Measurement[][] = [[], []]
    for (let round = 1; round <= context.rounds; round++) {
      for (const [index, server] of servers.entries()) {
        // PostgreSQL's own CPU counts as "other processes": measuring again would not make it go away.
        const result = await context.measure(server, workloads[index], context.settings(scenario, context.duration), index === 0 ? undefined : 1)
        samples[index].push(result)
        context.log(`[stores ${scenario.id}] round ${round} ${names[index]}: ${Math.round(result.reqPerSec)} req/s, ` +
          `${result.cpuMicrosPerRequest.toFixed(1)} µs CPU/req, p99 ${result.latencyP99} ms, others ${result.otherLoad.toFixed(2)} CPU` +
          `${result.non2xx > 0 ? `, non-2xx ${result.non2xx}` : ''}`)
      }
    }
    const [memorySide, postgresSide] = servers.map((server, index) => side(samples[index], memory(server.pid).peakRss))
    const ratios = {
      reqPerSec: ratio(postgresSide.reqPerSec, memorySide.reqPerSec),
      cpuPerRequest: ratio(postgresSide.cpuMicrosPerRequest, memorySide.cpuMicrosPerRequest),
      latencyP99: ratio(postgresSide.latencyP99, memorySide.latencyP99)
    }
    context.log(`[stores ${scenario.id}] postgres / memory: req/s ${ratios.reqPerSec.toFixed(2)}, server CPU ${ratios.cpuPerRequest.toFixed(2)}`)
    return { id: scenario.id, title: scenario.title, memory: memorySide, postgres: postgresSide, ratios }
  } finally {
    for (const server of servers) await server.stop()
    await sql(context.databaseUrl, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  }
}

/** Runs the group, or reports it skipped when PostgreSQL does not answer SELECT 1. */
export async function runStores (context: StoresContext): Promise<StoresResult> {
  const database = redact(context.databaseUrl)
  try {
    await sql(context.databaseUrl, 'SELECT 1')
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    context.log(`Memory vs PostgreSQL store comparison skipped: PostgreSQL not reachable at ${database} (${reason})`)
    return { skipped: true, database, reason }
  }
  const scenarios: StoreScenarioResult[] = []
  for (const scenario of context.scenarios) scenarios.push(await runScenario(context, scenario))
  return { skipped: false, database, scenarios }
}

const int = (n: number): string => Math.round(n).toLocaleString('en-US')

/** The group's section of the report. */
export function storesMarkdown (result: StoresResult): string {
  const heading = '### Memory vs PostgreSQL store'
  if (result.skipped) {
    return `${heading}\n\nMemory vs PostgreSQL store comparison skipped: PostgreSQL not reachable at ${result.database} (${result.reason}).`
  }
  const rows = result.scenarios.map((s) => {
    const { memory: m, postgres: p } = s
    return [
      s.title,
      int(m.reqPerSec), int(p.reqPerSec), s.ratios.reqPerSec.toFixed(2),
      `${m.latencyP50} / ${p.latencyP50}`, `${m.latencyP99} / ${p.latencyP99}`,
      `${int(m.non2xx)} / ${int(p.non2xx)}`,
      m.cpuMicrosPerRequest.toFixed(1), p.cpuMicrosPerRequest.toFixed(1), s.ratios.cpuPerRequest.toFixed(2),
      `${m.otherCpuMicrosPerRequest.toFixed(1)} / ${p.otherCpuMicrosPerRequest.toFixed(1)}`
    ]
  })
  return `${heading}\n\n` +
    `The same compiled service, cats in memory (M) or in PostgreSQL (P, ${result.database}, a fresh schema per scenario); ` +
    'ratio = postgres / memory, medians of the rounds, no target. ' +
    'Server CPU is the service process only: PostgreSQL runs in other processes, so its CPU is not in the server CPU ' +
    'columns or their ratio, while req/s and latency do include the database round trips. Other CPU is what the rest ' +
    'of the machine used per request (on the PostgreSQL side mostly the database).\n\n' +
    table(['Scenario', 'req/s memory', 'req/s postgres', 'req/s ratio', 'p50 ms (M / P)', 'p99 ms (M / P)',
      'non-2xx (M / P)', 'server CPU µs/req memory', 'server CPU µs/req postgres', 'server CPU ratio',
      'other CPU µs/req (M / P)'], rows)
}
