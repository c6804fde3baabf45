/**
 * What every group of the benchmark shares: the servers' environment and the
 * start-up time of each start, the load settings of a run, and measurements
 * taken again while other processes disturb them.
 */
import { measure, type LoadSettings, type Measurement, type Workload } from './load.js'
import { warmupBefore, type Mode } from './options.js'
import { memory } from './proc.js'
import { startServer, type RunningServer, type ServerKind } from './servers.js'

export const CATS_MAX = 2_000_000

// Other processes on the machine inflate the server's CPU per request (preemption,
// caches): a run during which they used more than this many cores is measured again.
const BUSY_MACHINE = 0.25

export interface HarnessOptions {
  /** Repository root. */
  root: string
  mode: Mode
  /** LOG_LEVEL of the service. */
  logLevel: string
  /** CPU the servers are pinned to; undefined leaves them unpinned. */
  serverCpu: number | undefined
  /** JWT_SECRET of the project and the baseline. */
  secret: string
  log: (message: string) => void
}

export interface StartOverrides {
  /** Environment on top of the server kind's own. */
  env?: Record<string, string>
  /** Runs the server under node --cpu-prof, writing its profile here (the project from its unbundled build). */
  profileDir?: string
  /** Whether the start-up time goes into the report; by default unless profiled. */
  countStartup?: boolean
}

export interface StartupSample {
  wallMs: number
  cpuMs: number
}

export interface Harness {
  mode: Mode
  log: (message: string) => void
  /** The environment each kind of server gets (on top of PATH and HOME). */
  env: Record<ServerKind, Record<string, string>>
  /** Spawn to first successful request (wall and the server's CPU time, ms) of every counted start. */
  startups: Record<ServerKind, StartupSample[]>
  start: (kind: ServerKind, overrides?: StartOverrides) => Promise<RunningServer>
  /** A run of `seconds` (or of exactly `amount` requests) with the mode's connections unless `overrides` say otherwise. */
  settings: (seconds: number, overrides?: Partial<LoadSettings>, amount?: number) => LoadSettings
  /** `run()`, repeated (up to `attempts` times) while other processes disturb it; keeps the least disturbed result. */
  quietest: <T extends { otherLoad: number }>(run: () => Promise<T>, attempts?: number) => Promise<T>
  /** measure() through quietest(). */
  measureQuiet: (server: RunningServer, workload: Workload, settings: LoadSettings, attempts?: number) => Promise<Measurement>
  /**
   * Measures servers over `starts` fresh starts (the mode's by default): each start launches them all, prepares
   * them (cats, logouts), measures the mode's rounds interleaved, each run straight after its server's warm-up,
   * and stops them. The order of the servers rotates from one start to the next, so no server is always measured
   * first. Returns every run per server and the highest peak RSS of its starts.
   */
  measureStarts: (plan: StartsPlan) => Promise<{ samples: Measurement[][], peakRss: number[] }>
  /** Runs measured again because other processes disturbed them. */
  remeasured: () => number
}

export interface StartsPlan {
  /** Starts the servers of one start into `servers`, in a fixed order (those started are stopped if a later one fails). */
  launch: (servers: RunningServer[]) => Promise<void>
  /** Prepares the started servers: cats, logouts. */
  prepare: (servers: RunningServer[]) => Promise<void>
  /** A fresh workload for each server, run and warm-up. */
  workload: () => Workload
  settings: LoadSettings
  /** Requests per warm-up instead of its seconds (the login scenario's, each a scrypt hash). */
  warmupAmount?: number
  /** The name of a server in the progress lines. */
  label: (index: number) => string
  starts?: number
  /** Called with a server (its index in launch order) after its first warm-up of a start (profiling counts from there). */
  onWarmedUp?: (index: number, server: RunningServer) => void
}

/** One run in a progress line. */
const progress = (m: Measurement): string =>
  `${Math.round(m.reqPerSec).toLocaleString('en-US')} req/s, ${m.cpuMicrosPerRequest.toFixed(1)} µs CPU/req, ` +
  `p99 ${m.latencyP99} ms, busy ${(m.serverBusy * 100).toFixed(0)}%, others ${m.otherLoad.toFixed(2)} CPU` +
  `${m.non2xx > 0 ? `, non-2xx ${m.non2xx}` : ''}`

/** The environment of each kind of server, beside PATH and HOME (see BENCHMARKS.md, Settings). */
export function serverEnvironments (secret: string, logLevel: string): Record<ServerKind, Record<string, string>> {
  return {
    project: {
      JWT_SECRET: secret,
      LOG_LEVEL: logLevel,
      METRICS_ENABLED: 'false',
      CATS_MAX: String(CATS_MAX),
      // One load generator is one client address logging in as one user: the failed-login locks would turn the
      // login scenarios into a flood of cheap 429s, which the baseline (no locks) does not answer.
      LOGIN_MAX_FAILURES: '1000000000',
      LOGIN_CLIENT_MAX_FAILURES: '1000000000'
    },
    baseline: { JWT_SECRET: secret, CATS_MAX: String(CATS_MAX) },
    // The service's log level, for the floor that runs with the service's logger (FLOOR_FEATURES).
    floor: { JWT_SECRET: secret, LOG_LEVEL: logLevel, FLOOR_CATS: '1000' }
  }
}

export function createHarness (options: HarnessOptions): Harness {
  const { root, mode, serverCpu, secret, log } = options
  const env = serverEnvironments(secret, options.logLevel)
  const startups: Record<ServerKind, StartupSample[]> = { project: [], baseline: [], floor: [] }
  let retries = 0

  async function start (kind: ServerKind, overrides: StartOverrides = {}): Promise<RunningServer> {
    const { profileDir, countStartup = profileDir === undefined } = overrides
    const nodeArgs = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
    const server = await startServer(kind, { root, cpu: serverCpu, env: { ...env[kind], ...overrides.env }, nodeArgs, unbundled: profileDir !== undefined })
    if (countStartup) startups[kind].push({ wallMs: server.startupMs, cpuMs: server.startupCpuMs })
    return server
  }

  const settings = (seconds: number, overrides: Partial<LoadSettings> = {}, amount?: number): LoadSettings => ({
    connections: mode.connections,
    ...overrides,
    ...(amount === undefined ? { duration: seconds } : { amount }),
    timeout: 30
  })

  async function quietest<T extends { otherLoad: number }> (run: () => Promise<T>, attempts = mode.attempts): Promise<T> {
    let best = await run()
    for (let attempt = 1; attempt < attempts && best.otherLoad > BUSY_MACHINE; attempt++) {
      retries++
      const again = await run()
      if (again.otherLoad < best.otherLoad) best = again
    }
    return best
  }

  const measureQuiet = (server: RunningServer, workload: Workload, load: LoadSettings, attempts?: number): Promise<Measurement> =>
    quietest(() => measure(server.pid, server.url, workload, load), attempts)

  /**
   * The measured rounds of one start, interleaved: every server once per round (A B A B …) in the given order,
   * each run straight after the server's warm-up; logs each run; returns the runs per server, by launch index.
   *
   * Why straight after: when every server of a start was warmed up in one pass and measured in the next, the one
   * launched first idled longest between the two in every start (the service, in the main comparison), and a
   * quiet process is not the one that was warmed up (V8 shrinks a quiet heap and collects it in full). Now every
   * server goes from its warm-up to its run with nothing in between, whatever its place in the order.
   */
  async function measureRounds (plan: StartsPlan, servers: RunningServer[], order: number[],
    label: (round: number, index: number) => string): Promise<Measurement[][]> {
    const samples: Measurement[][] = servers.map(() => [])
    const workloads = servers.map(() => plan.workload())
    for (let round = 1; round <= mode.rounds; round++) {
      for (const index of order) {
        const server = servers[index]
        await measure(server.pid, server.url, plan.workload(), settings(warmupBefore(mode, round), plan.settings, plan.warmupAmount))
        if (round === 1) plan.onWarmedUp?.(index, server)
        const result = await measureQuiet(server, workloads[index], plan.settings)
        samples[index].push(result)
        log(`${label(round, index)}: ${progress(result)}`)
      }
    }
    return samples
  }

  async function measureStarts (plan: StartsPlan): Promise<{ samples: Measurement[][], peakRss: number[] }> {
    const { starts = mode.starts } = plan
    const samples: Measurement[][] = []
    const peakRss: number[] = []
    for (let start = 1; start <= starts; start++) {
      const servers: RunningServer[] = []
      try {
        await plan.launch(servers)
        await plan.prepare(servers)
        const order = servers.map((_, index) => (index + start - 1) % servers.length)
        const runs = await measureRounds(plan, servers, order, (round, index) => `${plan.label(index)}, start ${start} round ${round}`)
        for (const [index, server] of servers.entries()) {
          (samples[index] ??= []).push(...runs[index])
          peakRss[index] = Math.max(peakRss[index] ?? 0, memory(server.pid).peakRss)
        }
      } finally {
        for (const server of servers) await server.stop()
      }
    }
    return { samples, peakRss }
  }

  return { mode, log, env, startups, start, settings, quietest, measureQuiet, measureStarts, remeasured: () => retries }
}
