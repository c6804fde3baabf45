/**
 * The Fastify floor: a scenario on the baseline, the baseline without the
 * service's headers, the bare floor server, the floor server with the
 * service's headers, the same with a metrics hook, and the service with
 * metrics off and on, interleaved round by round: how much of the service's
 * ratio is Fastify itself, how much the headers and the metrics hook, and how
 * much its own plugins.
 */
import type { Harness } from './harness.js'
import { measure, prefill } from './load.js'
import { memory } from './proc.js'
import { summarize, type FloorResult } from './report.js'
import type { Scenario } from './scenarios.js'
import type { RunningServer } from './servers.js'

export async function runFloor (bench: Harness, scenario: Scenario): Promise<FloorResult> {
  const { mode } = bench
  const servers: RunningServer[] = []
  try {
    servers.push(await bench.start('baseline'), await bench.start('baseline', { env: { BASELINE_HEADERS: '0' } }),
      await bench.start('floor', { env: { FLOOR_HEADERS: '0', FLOOR_CATS: String(scenario.cats) } }),
      await bench.start('floor', { env: { FLOOR_HEADERS: '1', FLOOR_CATS: String(scenario.cats) } }),
      await bench.start('floor', { env: { FLOOR_HEADERS: '1', FLOOR_METRICS: '1', FLOOR_CATS: String(scenario.cats) } }),
      await bench.start('project'), await bench.start('project', { env: { METRICS_ENABLED: 'true' } }))
    // The floor servers create their cats themselves (FLOOR_CATS).
    for (const server of [servers[0], servers[1], servers[5], servers[6]]) await prefill(server.url, scenario.cats)
    for (const server of servers) await measure(server.pid, server.url, scenario.workload(), bench.settings(mode.warmup, scenario.settings))
    const samples = await bench.measureRounds(servers, servers.map(() => scenario.workload()),
      bench.settings(mode.duration, scenario.settings), (round, index) => `[floor ${scenario.id}] round ${round} server ${index + 1} of ${servers.length}`)
    const [baseline, bareBaseline, bare, headers, headersMetrics, project, projectMetrics] =
      servers.map((server, index) => summarize(samples[index], memory(server.pid).peakRss))
    return { title: scenario.title, baseline, bareBaseline, bare, headers, headersMetrics, project, projectMetrics }
  } finally {
    for (const server of servers) await server.stop()
  }
}
