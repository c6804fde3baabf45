/**
 * Scaling (project only): one server per size of the mode, each prefilled to its size; then the CPU per request of
 * GET, PUT and DELETE + POST on /cats/:id at every size, the sizes measured side by side in interleaved rounds, and
 * the RSS per stored cat. Target: for each operation, the highest CPU per request over the sizes at most 1.2 × the
 * lowest.
 *
 * Why side by side: one server grown from size to size measured each size minutes after the one before, so the
 * host's drift over those minutes landed in the ratio (a 100,000-cat GET measured cheaper than a 1,000-cat one).
 * Interleaved, every size sees the same moments of the host, as the servers of the main comparison do.
 */
import type { Harness } from './harness.js'
import { createCat, JSON_HEADERS, measure, prefill, type LoadSettings, type Measurement, type PrefillResult, type Workload } from './load.js'
import { memory } from './proc.js'
import { median, summarize, type ScalingOp, type ScalingResult, type ScalingStep } from './report.js'
import { perId } from './scenarios.js'
import type { RunningServer } from './servers.js'

const TARGET = 1.2
const OPS: ScalingOp[] = ['get', 'put', 'delete']

/** A server holding `size` cats, with what its prefill took and its RSS when empty and when full. */
interface Filled {
  server: RunningServer
  size: number
  prefill: PrefillResult
  emptyRss: number
  rss: number
}

/** The operation's workload at `size` cats. */
function workloadOf (op: ScalingOp, size: number): Workload {
  switch (op) {
    case 'get': return { requests: perId({ method: 'GET' }, size, 1_000) }
    case 'put': return { requests: perId({ method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ age: 4 }) }, size, 1_000) }
    // One pipelined connection, strictly alternating: each DELETE removes the newest cat, the POST puts it back.
    case 'delete': return { requests: [{ method: 'DELETE', path: `/cats/${size}` }, createCat] }
  }
}

export async function runScaling (bench: Harness): Promise<ScalingResult> {
  const { mode, log } = bench
  const settingsOf = (op: ScalingOp, seconds: number): LoadSettings =>
    op === 'delete' ? bench.settings(seconds, { connections: 1, pipelining: 16 }) : bench.settings(seconds)
  const servers: RunningServer[] = []
  const filled: Filled[] = []
  try {
    for (const target of mode.scalingSizes) {
      const server = await bench.start('project')
      servers.push(server)
      const emptyRss = memory(server.pid).rss
      // A time budget keeps the run bounded on a slow or busy machine; the report then shows the size reached.
      const result = await prefill(server.url, target, mode.prefillBudget)
      const { rss } = memory(server.pid)
      filled.push({ server, size: result.cats, prefill: result, emptyRss, rss })
      log(`[scaling] ${result.cats} cats: prefill ${Math.round(result.catsPerSec)} cats/s, RSS ${(rss / 2 ** 20).toFixed(0)} MiB` +
        `${result.cats < target ? ` (stopped after ${mode.prefillBudget} s, short of ${target})` : ''}`)
    }
    // Every operation at every size first gets a longer warm-up than the other scenarios': the first size must not
    // pay for JIT compilation, and after a large prefill the first seconds of writes still pay for the heap settling
    // (at 1,000,000 cats a PUT measured about twice its steady cost in the 2 s after a 4 s warm-up).
    for (const { server, size } of filled) {
      for (const op of OPS) await measure(server.pid, server.url, workloadOf(op, size), settingsOf(op, 2 * mode.warmup))
    }
    // Rounds: each operation at every size in turn, the order of the sizes rotating from round to round, and each
    // run straight after a lead-in on its server (the other sizes ran in between).
    const runs = filled.map((): Record<ScalingOp, Measurement[]> => ({ get: [], put: [], delete: [] }))
    for (let round = 0; round < mode.scalingRuns; round++) {
      for (const op of OPS) {
        for (let turn = 0; turn < filled.length; turn++) {
          const index = (turn + round) % filled.length
          const { server, size } = filled[index]
          const workload = workloadOf(op, size)
          await measure(server.pid, server.url, workload, settingsOf(op, mode.leadIn))
          const run = await bench.measureQuiet(server, workload, settingsOf(op, mode.scalingSeconds))
          runs[index][op].push(run)
          log(`[scaling] round ${round + 1}, ${size} cats ${op}: ${run.cpuMicrosPerRequest.toFixed(1)} µs CPU/req, ` +
            `${Math.round(run.reqPerSec)} req/s, others ${run.otherLoad.toFixed(2)} CPU`)
        }
      }
    }
    const steps: ScalingStep[] = filled.map((entry, index) => {
      const { server, size, emptyRss, rss } = entry
      const previous = index === 0 ? { size: 0, rss: emptyRss } : filled[index - 1]
      const { peakRss } = memory(server.pid)
      return {
        size,
        prefill: entry.prefill,
        rss,
        rssPerCat: (rss - emptyRss) / size,
        marginalRssPerCat: (rss - previous.rss) / (size - previous.size),
        ops: { get: summarize(runs[index].get, peakRss), put: summarize(runs[index].put, peakRss), delete: summarize(runs[index].delete, peakRss) }
      }
    })
    const spreadOf = (op: ScalingOp): number => {
      const costs = steps.map((step) => step.ops[op].cpuMicrosPerRequest)
      return Math.max(...costs) / Math.min(...costs)
    }
    const spread = { get: spreadOf('get'), put: spreadOf('put'), delete: spreadOf('delete') }
    return {
      emptyRss: median(filled.map(({ emptyRss }) => emptyRss)),
      steps,
      spread,
      target: TARGET,
      pass: { get: spread.get <= TARGET, put: spread.put <= TARGET, delete: spread.delete <= TARGET }
    }
  } finally {
    for (const server of servers) await server.stop()
  }
}
