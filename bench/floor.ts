/**
 * The Fastify floor: a scenario on the baseline, the baseline without the
 * service's headers, the bare floor server, the floor server with the
 * service's headers, and the service, interleaved round by round: how much of
 * the service's ratio is Fastify itself, how much the headers, and how much
 * its own plugins.
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
      await bench.start('floor', { env: { FLOOR_HEADERS: '1', FLOOR_CATS: String(scenario.cats) } }), await bench.start('project'))
    // The floor servers create their cats themselves (FLOOR_CATS).
    for (const server of [servers[0], servers[1], servers[4]]) await prefill(server.url, scenario.cats)
    for (const server of servers) await measure(server.pid, server.url, scenario.workload(), bench.settings(mode.warmup, scenario.settings))
    const samples = await bench.measureRounds(servers, servers.map(() => scenario.workload()),
      bench.settings(mode.duration, scenario.settings), (round, index) => `[floor ${scenario.id}] round ${round} server ${index + 1} of 5`)
    const [baseline, bareBaseline, bare, headers, project] = servers.map((server, index) => summarize(samples[index], memory(server.pid).peakRss))
    return { title: scenario.title, baseline, bareBaseline, bare, headers, project }
  } finally {
    for (const server of servers) await server.stop()
  }
}
