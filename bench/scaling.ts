/**
 * Scaling (project only): one server prefilled to each of the mode's sizes in
 * turn; at each size the CPU per request of GET, PUT and DELETE + POST on
 * /cats/:id, and the RSS per stored cat. Target: for each operation, the
 * highest CPU per request over the sizes at most 1.2 × the lowest.
 */
import type { Harness } from './harness.js'
import { createCat, JSON_HEADERS, measure, prefill, type LoadSettings, type Measurement, type Workload } from './load.js'
import { memory } from './proc.js'
import { median, type ScalingOp, type ScalingOpResult, type ScalingResult, type ScalingStep } from './report.js'
import { perId } from './scenarios.js'
import type { RunningServer } from './servers.js'

const TARGET = 1.2
const OPS: ScalingOp[] = ['get', 'put', 'delete']

/** The mode's number of runs of one operation, as medians (non-2xx summed). */
async function scalingOp (bench: Harness, server: RunningServer, workload: Workload, settings: LoadSettings): Promise<ScalingOpResult> {
  const runs: Measurement[] = []
  for (let run = 0; run < bench.mode.scalingRuns; run++) runs.push(await bench.measureQuiet(server, workload, settings))
  return {
    cpuMicrosPerRequest: median(runs.map((m) => m.cpuMicrosPerRequest)),
    reqPerSec: median(runs.map((m) => m.reqPerSec)),
    latencyP99: median(runs.map((m) => m.latencyP99)),
    non2xx: runs.reduce((sum, m) => sum + m.non2xx, 0),
    otherLoad: median(runs.map((m) => m.otherLoad))
  }
}

export async function runScaling (bench: Harness): Promise<ScalingResult> {
  const { mode, log } = bench
  const server = await bench.start('project')
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
      const ops: Record<ScalingOp, () => Workload> = {
        get: () => ({ requests: perId({ method: 'GET' }, size, 1_000) }),
        put: () => ({ requests: perId({ method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ age: 4 }) }, size, 1_000) }),
        // One pipelined connection, strictly alternating: each DELETE removes the newest cat, the POST puts it back.
        delete: () => ({ requests: [{ method: 'DELETE', path: `/cats/${size}` }, createCat] })
      }
      const opSettings: Record<ScalingOp, (seconds: number) => LoadSettings> = {
        get: (seconds) => bench.settings(seconds),
        put: (seconds) => bench.settings(seconds),
        delete: (seconds) => bench.settings(seconds, { connections: 1, pipelining: 16 })
      }
      // At every size, a longer warm-up than the other scenarios': the first size must not pay for JIT compilation,
      // and after a large prefill the first seconds of writes still pay for the heap settling (at 1,000,000 cats a
      // PUT measured about twice its steady cost in the 2 s after a 4 s warm-up).
      for (const op of OPS) await measure(server.pid, server.url, ops[op](), opSettings[op](2 * mode.warmup))
      const runOp = async (op: ScalingOp): Promise<ScalingOpResult> => {
        const result = await scalingOp(bench, server, ops[op](), opSettings[op](mode.scalingSeconds))
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
    return {
      emptyRss,
      steps,
      spread,
      target: TARGET,
      pass: { get: spread.get <= TARGET, put: spread.put <= TARGET, delete: spread.delete <= TARGET }
    }
  } finally {
    await server.stop()
  }
}
