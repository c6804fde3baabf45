/** The stores group (`stores`): the service on memory, PostgreSQL and PGlite side by side; BENCHMARKS.md gives its method and target. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freshSchemaName, urlWithSchema } from '../test/support/sql-schemas.js'
import { DATABASE_URL, int, median, summarize, table, verdict, type Bench } from './harness.js'
import { measure, prefill, type Measurement } from './load.js'
import type { Scenario } from './scenarios.js'
import { cpuSeconds, type RunningServer } from './servers.js'

const TARGETS: Record<string, number | undefined> = { 'cat-read': 2, 'cats-list': undefined, 'cat-create': undefined, 'cat-update': 2 }
const STORES = ['memory', 'postgres', 'pglite'] as const

/** One short-lived connection, apart from the service's pool. */
export async function sql (url: string, statement: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  client.on('error', () => {})
  try {
    await client.connect()
    return (await client.query(statement, params)).rows
  } finally {
    await client.end().catch(() => {})
  }
}

/** CPU seconds so far of the backends serving the connections named `schema` (the service's pool), if local. */
async function databaseCpu (url: string, schema: string): Promise<number> {
  const rows = await sql(url, 'SELECT pid FROM pg_stat_activity WHERE application_name = $1', [schema])
  return rows.map(({ pid }) => Number(pid)).reduce((total, pid) => {
    try {
      return total + (readFileSync(`/proc/${pid}/comm`, 'utf8') === 'postgres\n' ? cpuSeconds(pid) : 0)
    } catch {
      return total // In another PID namespace or on another machine.
    }
  }, 0)
}

async function runScenario (bench: Bench, scenario: Scenario): Promise<string[][]> {
  const schema = freshSchemaName('bench')
  const pgliteDir = mkdtempSync(join(os.tmpdir(), 'cats-bench-pglite-'))
  await sql(DATABASE_URL, `CREATE SCHEMA ${schema}`)
  const urls = [undefined, urlWithSchema(DATABASE_URL, schema, { application_name: schema }), `pglite://${pgliteDir}`]
  const servers: RunningServer[] = []
  try {
    for (const url of urls) servers.push(await bench.start('service', url === undefined ? {} : { DATABASE_URL: url }))
    for (const server of servers) await prefill(server.url, scenario.cats)
    const runs: Measurement[][] = servers.map(() => [])
    const database: number[] = []
    for (let round = 0; round < bench.mode.starts; round++) {
      for (const [index, { pid, url }] of servers.entries()) {
        const { connections } = scenario
        await measure(pid, url, scenario.requests(), { connections, seconds: round === 0 ? bench.mode.warmup : bench.mode.leadIn })
        const before = index === 1 ? await databaseCpu(DATABASE_URL, schema) : 0
        const run = await measure(pid, url, scenario.requests(), { connections, seconds: bench.mode.seconds })
        runs[index].push(run)
        if (index === 1) database.push((await databaseCpu(DATABASE_URL, schema) - before) / run.responses * 1e6)
        bench.log(`[stores ${scenario.id}] round ${round + 1} ${STORES[index]}: ${int(run.reqPerSec)} req/s, ${run.cpuMicros.toFixed(1)} µs CPU/req`)
      }
    }
    const sides = runs.map(summarize)
    const target = TARGETS[scenario.id]
    return sides.map((side, index) => {
      const ratio = side.cpuMicros / sides[0].cpuMicros
      return [index === 0 ? scenario.title : '', STORES[index], int(side.reqPerSec), String(side.p99), String(side.non2xx),
        side.cpuMicros.toFixed(1), index === 0 ? '' : ratio.toFixed(2),
        index === 0 ? '—' : index === 1 ? median(database).toFixed(1) : 'in server CPU',
        index === 1 && target !== undefined ? `≤ ${target} ${verdict(ratio <= target)}` : '']
    })
  } finally {
    for (const server of servers) await server.stop()
    await sql(DATABASE_URL, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    rmSync(pgliteDir, { recursive: true, force: true })
  }
}

export async function runStores (bench: Bench, scenarios: Scenario[]): Promise<string> {
  const heading = '### Memory, PostgreSQL and PGlite stores (server CPU ratio = store / memory)'
  try {
    await sql(DATABASE_URL, 'SELECT 1')
  } catch (error) {
    bench.log(`[stores] skipped: PostgreSQL did not answer at BENCH_DATABASE_URL (${String(error)})`)
    return `${heading}\n\nSkipped: PostgreSQL did not answer at BENCH_DATABASE_URL.`
  }
  const rows: string[][] = []
  for (const scenario of scenarios.filter((s) => s.id in TARGETS)) rows.push(...await runScenario(bench, scenario))
  return `${heading}\n\n` + table(['Scenario', 'store', 'req/s', 'p99 ms', 'non-2xx', 'server CPU µs/req', 'ratio',
    'database CPU µs/req (0: not local)', 'Target'], rows)
}
