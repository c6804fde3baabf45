/** The scaling group (`scaling`): the service's CPU per request by collection size; BENCHMARKS.md gives its method and target. */
import { int, median, table, verdict, type Bench } from './harness.js'
import { createCat, JSON_HEADERS, measure, prefill, type LoadRequest, type Measurement, type RunSettings } from './load.js'
import { perId } from './scenarios.js'
import { rssBytes } from '../test/support/proc.js'
import type { RunningServer } from './servers.js'

const TARGET = 1.2
/** Seconds the prefill of one size may take: the table then shows the size reached. */
const PREFILL_BUDGET = 180

const OPS = ['GET /cats/:id', 'PUT /cats/:id', 'DELETE /cats/:id + POST /cats'] as const
type Op = typeof OPS[number]

function requestsOf (op: Op, size: number): LoadRequest[] {
  if (op === 'GET /cats/:id') return perId({ method: 'GET' }, size, 1_000)
  if (op === 'PUT /cats/:id') return perId({ method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ age: 4 }) }, size, 1_000)
  // Strictly alternating on one pipelined connection: the DELETE removes the newest cat, the POST adds it back.
  return [{ method: 'DELETE', path: `/cats/${size}` }, createCat]
}

const settingsOf = (op: Op, seconds: number): RunSettings => op === 'DELETE /cats/:id + POST /cats' ? { connections: 1, pipelining: 16, seconds } : { seconds }

export async function runScaling (bench: Bench): Promise<string> {
  const { mode, log } = bench
  const started: RunningServer[] = []
  const servers: Array<{ pid: number, url: string, size: number, emptyRss: number, rss: number }> = []
  try {
    for (const target of mode.scalingSizes) {
      const server = await bench.start('service')
      started.push(server)
      const emptyRss = rssBytes(server.pid)
      const size = await prefill(server.url, target, PREFILL_BUDGET)
      servers.push({ pid: server.pid, url: server.url, size, emptyRss, rss: rssBytes(server.pid) })
      log(`[scaling] ${int(size)} cats${size < target ? ` (stopped after ${PREFILL_BUDGET} s)` : ''}`)
    }
    // A longer warm-up: after a large prefill the first seconds of writes still pay for the heap settling.
    for (const { pid, url, size } of servers) {
      for (const op of OPS) await measure(pid, url, requestsOf(op, size), settingsOf(op, 2 * mode.warmup))
    }
    const runs = servers.map(() => new Map<Op, Measurement[]>(OPS.map((op) => [op, []])))
    for (let round = 0; round < mode.scalingRounds; round++) {
      for (const op of OPS) {
        for (let turn = 0; turn < servers.length; turn++) {
          const index = (turn + round) % servers.length
          const { pid, url, size } = servers[index]
          await measure(pid, url, requestsOf(op, size), settingsOf(op, mode.leadIn))
          const run = await measure(pid, url, requestsOf(op, size), settingsOf(op, mode.seconds))
          runs[index].get(op)?.push(run)
          log(`[scaling] round ${round + 1}, ${int(size)} cats, ${op}: ${run.cpuMicros.toFixed(1)} µs CPU/req${run.non2xx > 0 ? `, non-2xx ${run.non2xx}` : ''}`)
        }
      }
    }
    const rows = OPS.map((op) => {
      const costs = runs.map((byOp) => median((byOp.get(op) ?? []).map((run) => run.cpuMicros)))
      const spread = Math.max(...costs) / Math.min(...costs)
      return [op, ...costs.map((cost) => cost.toFixed(1)), spread.toFixed(2), `≤ ${TARGET} ${verdict(spread <= TARGET)}`]
    })
    const memory = ['RSS MiB (bytes per cat)', ...servers.map(({ size, emptyRss, rss }) => `${(rss / 2 ** 20).toFixed(0)} (${int((rss - emptyRss) / size)})`), '', '']
    return '### Scaling: the service\'s CPU µs per request by collection size\n\n' +
      table(['Operation', ...servers.map(({ size }) => `${int(size)} cats`), 'max / min', 'Target'], [...rows, memory])
  } finally {
    for (const server of started) await server.stop()
  }
}
