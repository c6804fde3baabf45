/**
 * npm run bench [-- options]: the compiled service against the plain node:http baseline (bench/baseline-server.ts)
 * over HTTP on 127.0.0.1, in server CPU time per request; see BENCHMARKS.md. Progress goes to stderr, the markdown
 * report to stdout and to bench/results/latest.md (git-ignored).
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { runFlood } from './flood.js'
import { createBench, int, median, summarize, table, verdict } from './harness.js'
import { measure, prefill, type Measurement } from './load.js'
import { runScaling } from './scaling.js'
import { scenarios as allScenarios, signToken, type Scenario } from './scenarios.js'
import { compileBaseline, describeCommit, type RunningServer } from './servers.js'
import { runScaleOut } from './scale-out.js'
import { runStores } from './stores.js'

const USAGE = `Usage: npm run bench -- [options]
  --quick        2 starts, runs of 1.5 s after 2 s of warm-up, scaling to 100,000 cats: about 15 minutes (without it:
                 10 starts, runs of 3 s after 5 s of warm-up, scaling to 1,000,000 cats: about 90 minutes on 2 cores)
  --starts N     fresh starts of each server per scenario (rounds, for the stores)
  --seconds S    seconds of each run, and at most of each warm-up (--quick --starts 1 --seconds 0.5 checks that it runs)
  --only a,b     only these groups: main, flood, scaling, stores, scale-out, startup, or ids of the main scenarios
                 (bench/scenarios.ts)
The stores and scale-out groups use PostgreSQL at BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test), if it
answers; scale-out also Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379), redis-server and pgbouncer.`

const { values: args } = parseArgs({
  options: { quick: { type: 'boolean' }, starts: { type: 'string' }, seconds: { type: 'string' }, only: { type: 'string' }, help: { type: 'boolean' } }
})
if (args.help === true) {
  console.log(USAGE)
  process.exit(0)
}
const quick = args.quick === true
const seconds = Number(args.seconds ?? (quick ? 1.5 : 3))
const cap = (warmup: number): number => args.seconds === undefined ? warmup : Math.min(warmup, seconds)
const mode = {
  starts: Number(args.starts ?? (quick ? 2 : 10)),
  seconds,
  warmup: cap(quick ? 2 : 5),
  leadIn: cap(quick ? 0.5 : 1),
  floodSeconds: cap(quick ? 2 : 5),
  scalingSizes: quick ? [1_000, 100_000] : [1_000, 100_000, 1_000_000],
  scalingRounds: quick ? 1 : 5
}
const only = args.only?.split(',')
const wanted = (id: string): boolean => only === undefined || only.includes(id)

const root = join(import.meta.dirname, '..')
compileBaseline(root)
// The servers on CPU 0, the load generator (this process: autocannon runs in it) on CPU 1, when taskset can.
const pinned = os.cpus().length >= 2 && spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)]).status === 0
const loadAverage = os.loadavg()[0]
const secret = randomBytes(32).toString('hex')
const bench = createBench(root, mode, secret, pinned)
bench.log(`${pinned ? 'servers on CPU 0, load generator on CPU 1' : 'nothing pinned'}; load average ${loadAverage.toFixed(2)}` +
  `${loadAverage > 0.5 ? ': other work on the machine skews the numbers' : ''}`)

/** The scenario's cats and logged-out tokens, on a server just started. */
async function prepare (scenario: Scenario, server: RunningServer): Promise<void> {
  const cats = await prefill(server.url, scenario.cats)
  if (cats !== scenario.cats) throw new Error(`${server.kind}: prefill created ${cats} of ${scenario.cats} cats`)
  const logouts = Array.from({ length: scenario.revoked ?? 0 }, () => ({ method: 'POST' as const, path: '/auth/logout', headers: { authorization: `Bearer ${signToken(secret)}` } }))
  if (logouts.length > 0 && (await measure(server.pid, server.url, logouts, { connections: 1, amount: logouts.length })).non2xx > 0) throw new Error(`${server.kind}: a logout failed`)
}

/**
 * One scenario on the service and the baseline (with a target, both with metrics on too) over fresh starts, each
 * server measured straight after its own warm-up, the order rotating from start to start; medians of all the runs.
 */
async function compare (scenario: Scenario): Promise<string[]> {
  const contenders = [{ kind: 'service' as const, env: {} }, { kind: 'baseline' as const, env: {} }]
  if (scenario.target !== undefined) contenders.push({ kind: 'service', env: { METRICS_ENABLED: 'true' } }, { kind: 'baseline', env: { BASELINE_METRICS: '1' } })
  const settings = { connections: scenario.connections, amount: scenario.amount, seconds: mode.seconds }
  const warmup = scenario.amount === undefined ? { ...settings, seconds: mode.warmup } : { ...settings, amount: 2 }
  const runs: Measurement[][] = contenders.map(() => [])
  for (let start = 0; start < mode.starts; start++) {
    const servers: RunningServer[] = []
    try {
      for (const { kind, env } of contenders) servers.push(await bench.start(kind, env))
      for (const server of servers) await prepare(scenario, server)
      for (let turn = 0; turn < servers.length; turn++) {
        const index = (turn + start) % servers.length
        const { pid, url, kind } = servers[index]
        await measure(pid, url, scenario.requests(), warmup)
        const run = await measure(pid, url, scenario.requests(), settings)
        runs[index].push(run)
        bench.log(`[${scenario.id}] ${kind}${index > 1 ? ', metrics on' : ''}, start ${start + 1}: ${int(run.reqPerSec)} req/s, ` +
          `${run.cpuMicros.toFixed(1)} µs CPU/req, p99 ${run.p99} ms${run.non2xx > 0 ? `, non-2xx ${run.non2xx}` : ''}`)
      }
    } finally {
      for (const server of servers) await server.stop()
    }
  }
  const [service, baseline, serviceMetrics, baselineMetrics] = runs.map(summarize)
  const ratio = service.cpuMicros / baseline.cpuMicros
  const metricsRatio = serviceMetrics === undefined ? undefined : serviceMetrics.cpuMicros / baselineMetrics.cpuMicros
  const { target } = scenario
  bench.log(`[${scenario.id}] CPU ratio ${ratio.toFixed(2)}${metricsRatio === undefined ? '' : `, metrics on ${metricsRatio.toFixed(2)}`}`)
  return [
    scenario.title, `${int(service.reqPerSec)} / ${int(baseline.reqPerSec)}`, `${service.p99} / ${baseline.p99}`,
    `${service.non2xx} / ${baseline.non2xx}`, service.cpuMicros.toFixed(1), baseline.cpuMicros.toFixed(1), ratio.toFixed(2),
    metricsRatio?.toFixed(2) ?? '—', target === undefined ? '—' : `≤ ${target.toFixed(2)}`,
    target === undefined ? '—' : verdict(ratio <= target && (metricsRatio ?? 0) <= target)
  ]
}

const started = Date.now()
const scenarios = allScenarios(secret)
const sections: string[] = []
const compared = scenarios.filter((scenario) => wanted('main') || wanted(scenario.id))
if (compared.length > 0) {
  const rows: string[][] = []
  for (const scenario of compared) rows.push(await compare(scenario))
  sections.push(`### Service vs. baseline: server CPU per request (medians of ${mode.starts} starts; ratio = service / baseline)\n\n` +
    table(['Scenario', 'req/s S / B', 'p99 ms S / B', 'non-2xx S / B', 'CPU µs/req service', 'CPU µs/req baseline', 'ratio',
      'ratio, metrics on', 'Target', 'Result'], rows))
}
if (wanted('flood')) sections.push(await runFlood(bench))
if (wanted('scaling')) sections.push(await runScaling(bench))
if (wanted('stores')) sections.push(await runStores(bench, scenarios))
if (wanted('scale-out')) sections.push(await runScaleOut(bench))
if (wanted('startup')) {
  // Every start above counts; both servers are started in turn until each has 9.
  while (Math.min(bench.startups.service.length, bench.startups.baseline.length) < 9) {
    for (const kind of ['service', 'baseline'] as const) await (await bench.start(kind)).stop()
  }
  const row = (kind: 'service' | 'baseline', target: string): string[] => {
    const times = bench.startups[kind]
    return [kind, String(times.length), median(times).toFixed(0), Math.min(...times).toFixed(0), Math.max(...times).toFixed(0), target]
  }
  sections.push('### Start-up: spawn to the first answer to GET /cats/0, ms\n\n' + table(['Server', 'starts', 'median', 'min', 'max', 'Target'],
    [row('service', `median ≤ 400 ${verdict(median(bench.startups.service) <= 400)}`), row('baseline', '—')]))
}

const cpus = os.cpus()
const report = `Run ${new Date().toISOString()} of ${describeCommit(root)}, ` +
  `${quick ? 'quick' : 'full'}, ${Math.round((Date.now() - started) / 1000)} s: ${cpus[0]?.model ?? 'unknown CPU'} × ${cpus.length}, ` +
  `Node ${process.version}; ${pinned ? 'server on CPU 0, load on CPU 1' : 'not pinned'}; ${mode.starts} starts, runs of ` +
  `${mode.seconds} s after ${mode.warmup} s of warm-up; load average at start ${loadAverage.toFixed(2)}.\n\n${sections.join('\n\n')}\n`
process.stdout.write(report)
mkdirSync(join(root, 'bench', 'results'), { recursive: true })
writeFileSync(join(root, 'bench', 'results', 'latest.md'), report)
