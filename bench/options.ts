/**
 * The command line of `npm run bench`: its options, the usage text, and the
 * run lengths and sizes that --quick and the other options select.
 */
import { parseArgs } from 'node:util'
import { DEFAULT_DATABASE_URL } from './stores.js'

export const USAGE = `Usage: npm run bench -- [options]
  --quick            short run (two starts, shorter runs; a full run takes about 90 minutes on 2 cores)
  --starts N         fresh starts of every server per scenario, each warmed up and measured (default 10, quick 2;
                     the floor group, which has no target, takes at most 3)
  --rounds N         measured rounds per start (default 1: A B A B … when more)
  --duration S       seconds per measured run (default 3, quick 1.5)
  --connections N    autocannon connections for the throughput scenarios (default 50)
  --only a,b         run only these parts (results are then not written): flood, scaling, stores, floor and the scenario ids
                     profile, profile-revoked, profile-bad-token, cat-read, cats-list, cats-list-10k, cat-create, cat-update,
                     cat-delete-create, login; start-up is always measured (at least 9 starts of each server), so --only startup
                     measures just that
                     (stores: memory, PostgreSQL at env BENCH_DATABASE_URL, default ${DEFAULT_DATABASE_URL}, and PGlite;
                     stores:<id> runs only that store scenario: stores:cat-read, stores:cats-list, stores:cat-create,
                     stores:cat-update)
  --log-level L      LOG_LEVEL of the service (default warn: no per-request logs)
  --no-pin           do not pin the server and the load generator to separate CPUs
  --profile          run both servers under node --cpu-prof in each scenario and print where their CPU time goes
                     (profiling slows it down: results are then not written)`

/** How long and how hard each part of the benchmark runs. */
export interface Mode {
  /**
   * Fresh starts of each server per scenario. Two starts of one build settle at CPU costs up to a quarter
   * apart for as long as they run, so a comparison rests on several starts of each side, not on one:
   * ten by default, since with six the ratio of two medians still moved by about 3% (one standard deviation)
   * from one run to the next, enough to flip a verdict near a target.
   */
  starts: number
  /** Fresh starts per floor scenario: the floor group is reported, not judged, so it takes fewer starts. */
  floorStarts: number
  /** Measured rounds per start. */
  rounds: number
  /** Seconds per measured run. */
  duration: number
  /** Seconds of warm-up per server and scenario, right before its first measured run. */
  warmup: number
  /** Seconds of warm-up right before each later run, to bring back a server that idled while the others ran. */
  leadIn: number
  connections: number
  /** Logins per measured run of the login scenario (a fixed number, so that every hash started is counted). */
  loginAmount: number
  floodConnections: number
  floodSeconds: number
  scalingSizes: number[]
  scalingSeconds: number
  scalingRuns: number
  /** Seconds the prefill of one scaling size may take at most. */
  prefillBudget: number
  /** Measurements per run at most, while other processes disturb it (see Harness.quietest). */
  attempts: number
}

/** Seconds of warm-up right before a start's measured run of this round (1 for the first). */
export const warmupBefore = (mode: Mode, round: number): number => round === 1 ? mode.warmup : mode.leadIn

export interface BenchOptions {
  help: boolean
  quick: boolean
  mode: Mode
  /** The parts named by --only; undefined runs them all. */
  only: Set<string> | undefined
  /** LOG_LEVEL of the service. */
  logLevel: string
  /** Pins the server and the load generator to separate CPUs. */
  pin: boolean
  profile: boolean
}

export function parseOptions (argv: string[] = process.argv.slice(2)): BenchOptions {
  const { values: args } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      starts: { type: 'string' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      connections: { type: 'string', default: '50' },
      only: { type: 'string' },
      'log-level': { type: 'string', default: 'warn' },
      'no-pin': { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false }
    }
  })
  const quick = args.quick
  const starts = Math.max(1, Number(args.starts ?? (quick ? 2 : 10)))
  return {
    help: args.help,
    quick,
    mode: {
      starts,
      floorStarts: Math.min(starts, 3),
      rounds: Math.max(1, Number(args.rounds ?? 1)),
      duration: Number(args.duration ?? (quick ? 1.5 : 3)),
      // V8 is still optimizing the service's hot functions for about 4 s of load (BENCHMARKS.md, Method).
      warmup: quick ? 2 : 5,
      leadIn: quick ? 0.5 : 1,
      connections: Number(args.connections),
      loginAmount: quick ? 6 : 12,
      floodConnections: 50,
      floodSeconds: quick ? 2 : 5,
      scalingSizes: quick ? [1_000, 100_000] : [1_000, 100_000, 1_000_000],
      scalingSeconds: quick ? 1.5 : 2,
      scalingRuns: quick ? 1 : 5,
      prefillBudget: quick ? 60 : 180,
      attempts: 2
    },
    only: args.only === undefined ? undefined : new Set(args.only.split(',').map((part) => part.trim())),
    logLevel: args['log-level'],
    pin: !args['no-pin'],
    profile: args.profile
  }
}
