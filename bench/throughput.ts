/**
 * One scenario on the project and the baseline (and, for a scenario with a
 * target, both with metrics on), each started afresh several times:
 * per start prefill, warm-up, then the measured rounds interleaved; compared
 * as project / baseline over all the runs. With --profile they run once under
 * node --cpu-prof and the measured rounds' profile summaries are logged.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { summarizeProfiles } from './cpu-profile.js'
import type { Harness } from './harness.js'
import { logOut, prefill } from './load.js'
import { compare, summarize, type ScenarioResult } from './report.js'
import { signToken, type Scenario } from './scenarios.js'
import type { ServerKind } from './servers.js'

/** A server of the comparison: its kind, its name in the log, and environment on top of its kind's. */
interface Contender {
  kind: ServerKind
  label: string
  env?: Record<string, string>
}

export async function runScenario (bench: Harness, scenario: Scenario, profile: boolean): Promise<ScenarioResult> {
  const { mode, log } = bench
  const login = scenario.id === 'login'
  const contenders: Contender[] = [
    { kind: 'project', label: 'project' },
    { kind: 'baseline', label: 'baseline' },
    // With metrics on, the baseline observes the service's request-duration histogram too: the same work per response.
    ...(scenario.target === undefined
      ? []
      : [
          { kind: 'project' as const, label: 'project, metrics on', env: { METRICS_ENABLED: 'true' } },
          { kind: 'baseline' as const, label: 'baseline, metrics on', env: { BASELINE_METRICS: '1' } }
        ])
  ]
  const profileDirs = contenders.map(({ kind }) => profile ? mkdtempSync(join(os.tmpdir(), `cats-bench-${kind}-`)) : undefined)
  const skipMs = contenders.map(() => 0)
  try {
    const { samples, peakRss } = await bench.measureStarts({
      launch: async (servers) => {
        for (const [index, { kind, env }] of contenders.entries()) servers.push(await bench.start(kind, { env, profileDir: profileDirs[index] }))
      },
      prepare: async (servers) => {
        for (const server of servers) {
          const filled = await prefill(server.url, scenario.cats)
          if (filled.cats !== scenario.cats) throw new Error(`${server.kind}: prefill created ${filled.cats} of ${scenario.cats} cats`)
          const revoked = scenario.revoked ?? 0
          if (revoked > 0) {
            const tokens = Array.from({ length: revoked }, () => signToken(bench.env.project.JWT_SECRET))
            const loggedOut = await logOut(server.url, tokens)
            if (loggedOut !== revoked) throw new Error(`${server.kind}: ${loggedOut} of ${revoked} logouts succeeded`)
          }
        }
      },
      // The login scenario warms up with two logins (scrypt takes about 0.3 s of CPU each).
      ...(login && { warmupAmount: 2 }),
      // Profiles leave out start-up, prefill and the first warm-up.
      onWarmedUp: (index, server) => { skipMs[index] = performance.now() - server.spawnedAt },
      workload: () => scenario.workload(),
      settings: bench.settings(mode.duration, scenario.settings, login ? mode.loginAmount : undefined),
      label: (index) => `[${scenario.id}] ${contenders[index].label}`,
      // A profile is written per start, and summarized as one.
      starts: profile ? 1 : mode.starts
    })
    const [project, baseline, projectMetrics, baselineMetrics] = samples.map((runs, index) => summarize(runs, peakRss[index]))
    const withMetrics = projectMetrics === undefined || baselineMetrics === undefined ? undefined : { project: projectMetrics, baseline: baselineMetrics }
    const result = compare(scenario.id, scenario.title, scenario.target, project, baseline, withMetrics)
    log(`[${scenario.id}] CPU ratio ${result.ratios.cpuPerRequest.toFixed(2)}` +
      `${result.metricsOn === undefined ? '' : ` (metrics on ${result.metricsOn.cpuPerRequest.toFixed(2)})`}, req/s ratio ${result.ratios.reqPerSec.toFixed(2)}`)
    return result
  } finally {
    for (const [index, dir] of profileDirs.entries()) {
      if (dir === undefined) continue
      // A server writes its profile when it exits.
      log(`[${scenario.id}] where the ${contenders[index].label}'s CPU time goes (node --cpu-prof, measured rounds only):\n` +
        summarizeProfiles(dir, skipMs[index]))
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
