/** What the groups of `npm run bench` share: the run lengths, starting a server, medians and tables. */
import type { Measurement } from './load.js'
import { serverEnvironments, startServer, type RunningServer, type ServerKind } from './servers.js'

/**
 * `starts`: fresh starts of each server per scenario (two starts of one build can settle up to a quarter apart).
 * In seconds: `seconds` each measured run; `warmup` straight before a server's run (V8 is still optimizing the
 * service for about 4 s); `leadIn` before a later run of a server that idled meanwhile; `floodSeconds` each probe.
 */
export interface Mode { starts: number, seconds: number, warmup: number, leadIn: number, floodSeconds: number, scalingSizes: number[], scalingRounds: number }

export interface Bench {
  mode: Mode
  secret: string
  log: (message: string) => void
  /** Starts a server with `env` on top of its kind's (on CPU 0 when pinned), recording its start-up time in `startups`. */
  start: (kind: ServerKind, env?: Record<string, string>) => Promise<RunningServer>
  startups: Record<ServerKind, number[]>
}

export function createBench (root: string, mode: Mode, secret: string, pinned: boolean): Bench {
  const environments = serverEnvironments(secret)
  const startups: Record<ServerKind, number[]> = { service: [], baseline: [] }
  const start = async (kind: ServerKind, env: Record<string, string> = {}): Promise<RunningServer> => {
    const server = await startServer(kind, { root, env: { ...environments[kind], ...env }, cpu: pinned ? 0 : undefined })
    // The start-up target is the memory store's: a database's migrations are not timed.
    if (env.DATABASE_URL === undefined) startups[kind].push(server.startupMs)
    return server
  }
  return { mode, secret, log: (message) => { process.stderr.write(`${message}\n`) }, start, startups }
}

/** The PostgreSQL and the Redis the groups that need them use. */
export const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test'
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'

export function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/** The medians of a server's runs; responses and non-2xx summed. */
export function summarize (runs: Measurement[]): Measurement {
  const mid = (pick: (run: Measurement) => number): number => median(runs.map(pick))
  const sum = (pick: (run: Measurement) => number): number => runs.reduce((total, run) => total + pick(run), 0)
  return { responses: sum((r) => r.responses), reqPerSec: mid((r) => r.reqPerSec), p99: mid((r) => r.p99), cpuMicros: mid((r) => r.cpuMicros), non2xx: sum((r) => r.non2xx) }
}

export const verdict = (pass: boolean): string => pass ? '**PASS**' : '**FAIL**'
export const int = (n: number): string => Math.round(n).toLocaleString('en-US')

export function table (header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}
