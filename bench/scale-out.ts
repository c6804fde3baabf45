/** The scaling-out group (`scale-out`): guarded requests per core on the layouts operators scale on; BENCHMARKS.md gives its method. */
import { performance } from 'node:perf_hooks'
import { findPgBouncer, startPgBouncer } from '../test/support/pgbouncer.js'
import { clusterMissing, startRedisCluster } from '../test/support/redis-cluster.js'
import { freshSchemaName, urlWithSchema } from '../test/support/sql-schemas.js'
import { DATABASE_URL as databaseUrl, int, REDIS_URL, summarize, table, type Bench } from './harness.js'
import { JSON_HEADERS, type Measurement } from './load.js'
import { cpuSeconds, type RunningServer } from './servers.js'
import { sql } from './stores.js'

/** Connections per instance, each with a session of its own; logins are scrypt-bound, so a few. */
const CONNECTIONS = 8
const SETTINGS = { REFRESH_TOKENS: 'true', REFRESH_RATE_LIMIT: '1000000000' }

interface Instance { server: RunningServer, access: string, chains: string[] }
type Route = 'profile' | 'refresh'

async function login (url: string): Promise<{ access_token: string, refresh_token: string }> {
  const res = await fetch(`${url}/auth/login`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ username: 'john', password: 'changeme' }) })
  if (res.status !== 200) throw new Error(`login answered ${res.status}: ${await res.text()}`)
  return await res.json() as { access_token: string, refresh_token: string }
}

async function instance (bench: Bench, env: Record<string, string>): Promise<Instance> {
  const server = await bench.start('service', { ...SETTINGS, ...env })
  const chains: string[] = []
  for (let index = 0; index < CONNECTIONS; index++) chains.push((await login(server.url)).refresh_token)
  return { server, access: (await login(server.url)).access_token, chains }
}

/**
 * One instance loaded for `seconds`: each connection sends its next request when its last is answered (a refresh with
 * the token its last refresh returned, so no chain is broken by a run's end); every latency, in ms.
 */
async function run ({ server, access, chains }: Instance, route: Route, seconds: number): Promise<{ latencies: number[], non2xx: number }> {
  const latencies: number[] = []
  let non2xx = 0
  const until = performance.now() + seconds * 1000
  await Promise.all(chains.map(async (_, chain) => {
    while (performance.now() < until) {
      const sent = performance.now()
      const res = route === 'profile'
        ? await fetch(`${server.url}/profile`, { headers: { authorization: `Bearer ${access}` } })
        : await fetch(`${server.url}/auth/refresh`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ refresh_token: chains[chain] }) })
      const body = await res.text()
      latencies.push(performance.now() - sent)
      if (res.status !== 200) non2xx++
      else if (route === 'refresh') chains[chain] = (JSON.parse(body) as { refresh_token: string }).refresh_token
    }
  }))
  return { latencies, non2xx }
}

/** Every instance of a layout loaded at once: responses per second, their CPU per response, the p99, the non-2xx. */
async function measure (instances: Instance[], route: Route, seconds: number): Promise<Measurement> {
  const cpu = instances.map(({ server }) => cpuSeconds(server.pid))
  const results = await Promise.all(instances.map(async (each) => await run(each, route, seconds)))
  const used = instances.reduce((total, { server }, index) => total + cpuSeconds(server.pid) - cpu[index], 0)
  const latencies = results.flatMap((result) => result.latencies).sort((x, y) => x - y)
  const responses = latencies.length
  const non2xx = results.reduce((total, result) => total + result.non2xx, 0)
  return { responses, reqPerSec: responses / seconds, cpuMicros: used / responses * 1e6, p99: latencies[Math.floor(responses * 0.99)], non2xx }
}

export async function runScaleOut (bench: Bench): Promise<string> {
  const heading = '### Scaling out: guarded requests per core (instances\' CPU) by layout'
  const bouncer = findPgBouncer()
  const missing = clusterMissing() ?? ('missing' in bouncer ? bouncer.missing : undefined) ??
    await sql(databaseUrl, 'SELECT 1').then(() => undefined, (error: unknown) => `PostgreSQL did not answer (${String(error)})`)
  if (missing !== undefined) return `${heading}\n\nSkipped: ${missing}.`
  const teardowns: Array<() => unknown> = []
  const owner = { teardown: (fn: () => unknown) => { teardowns.push(fn) } }
  const schema = freshSchemaName('bench')
  const instances: Instance[] = []
  try {
    await sql(databaseUrl, `CREATE SCHEMA ${schema}`)
    const direct = urlWithSchema(databaseUrl, schema)
    const cluster = await startRedisCluster(owner)
    const bouncer = await startPgBouncer(owner, databaseUrl, 'transaction', {}, schema)
    const pooled = { DATABASE_URL: bouncer.url, DATABASE_POOLER: 'transaction', DATABASE_PREPARED_STATEMENTS: 'false' }
    const layouts: Array<[string, Array<Record<string, string>>]> = [
      ['one instance, PostgreSQL and Redis', [{ DATABASE_URL: direct, REDIS_URL, REDIS_KEY_PREFIX: `${schema}:` }]],
      ['two instances, Redis Cluster', [{ REDIS_CLUSTER_NODES: cluster.setting }, { REDIS_CLUSTER_NODES: cluster.setting }]],
      ['two instances, PgBouncer (transaction)', [pooled, pooled]]
    ]
    const rows: string[][] = []
    for (const [name, environments] of layouts) {
      const started: Instance[] = []
      for (const env of environments) started.push(await instance(bench, env))
      instances.push(...started)
      for (const route of ['profile', 'refresh'] as const) {
        await measure(started, route, bench.mode.warmup)
        const runs: Measurement[] = []
        for (let round = 0; round < bench.mode.starts; round++) runs.push(await measure(started, route, bench.mode.seconds))
        const { reqPerSec, cpuMicros, p99, non2xx } = summarize(runs)
        bench.log(`[scale-out] ${name}, ${route}: ${int(1e6 / cpuMicros)} per core, p99 ${p99.toFixed(1)} ms`)
        rows.push([name, route === 'profile' ? 'GET /profile' : 'POST /auth/refresh', String(environments.length),
          int(reqPerSec), int(1e6 / cpuMicros), p99.toFixed(1), String(non2xx)])
      }
    }
    return `${heading}\n\n` + table(['Layout', 'Route', 'instances', 'responses/s', 'per core (per CPU-second)', 'p99 ms', 'non-2xx'], rows)
  } finally {
    for (const { server } of instances) await server.stop()
    for (const teardown of teardowns.reverse()) await teardown()
    await sql(databaseUrl, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  }
}
