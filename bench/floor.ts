/**
 * The Fastify floor: a scenario on the baseline, the baseline without the
 * service's headers, the bare floor server, the floor server with the
 * service's headers, the same with a metrics hook, the same with headers and the
 * service's production features from Fastify and its plugins, and the service with
 * metrics off and on, interleaved round by round over several starts: how much of the service's
 * ratio is Fastify itself, how much the headers and the metrics hook, how much
 * the logger, load shedding, draining hook and validation, and how much its own code.
 */
import type { Harness } from './harness.js'
import { prefill } from './load.js'
import { summarize, type FloorResult } from './report.js'
import type { Scenario } from './scenarios.js'
import type { ServerKind } from './servers.js'

export async function runFloor (bench: Harness, scenario: Scenario): Promise<FloorResult> {
  const { mode } = bench
  const cats = String(scenario.cats)
  // In the order of FloorResult's fields below.
  const contenders: Array<[ServerKind, Record<string, string>]> = [
    ['baseline', {}], ['baseline', { BASELINE_HEADERS: '0' }],
    ['floor', { FLOOR_HEADERS: '0', FLOOR_CATS: cats }], ['floor', { FLOOR_HEADERS: '1', FLOOR_CATS: cats }],
    ['floor', { FLOOR_HEADERS: '1', FLOOR_METRICS: '1', FLOOR_CATS: cats }],
    ['floor', { FLOOR_HEADERS: '1', FLOOR_FEATURES: '1', FLOOR_CATS: cats }],
    ['project', {}], ['project', { METRICS_ENABLED: 'true' }]
  ]
  const { samples, peakRss } = await bench.measureStarts({
    launch: async (servers) => {
      // One at a time, so that a failed start leaves the earlier ones in `servers` to be stopped.
      for (const [kind, env] of contenders) servers.push(await bench.start(kind, { env }))
    },
    prepare: async (servers) => {
      // The floor servers create their cats themselves (FLOOR_CATS).
      for (const server of servers.filter(({ kind }) => kind !== 'floor')) await prefill(server.url, scenario.cats)
    },
    workload: () => scenario.workload(),
    settings: bench.settings(mode.duration, scenario.settings),
    label: (index) => `[floor ${scenario.id}] server ${index + 1} of ${contenders.length}`,
    starts: mode.floorStarts
  })
  const [baseline, bareBaseline, bare, headers, headersMetrics, headersFeatures, project, projectMetrics] =
    samples.map((runs, index) => summarize(runs, peakRss[index]))
  return { title: scenario.title, baseline, bareBaseline, bare, headers, headersMetrics, headersFeatures, project, projectMetrics }
}
