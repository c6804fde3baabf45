/**
 * The two servers as child processes on free ports of 127.0.0.1 with clean environments: the bundled service as
 * `npm start` runs it, and the baseline transpiled beside dist/src. Also what the bench reads of a process in /proc.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import os from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import ts from 'typescript'
import { closedPort } from '../test/support/ports.js'

export type ServerKind = 'service' | 'baseline'

const COMMANDS: Record<ServerKind, string> = { service: 'dist/server/src/server.js', baseline: 'dist/bench/baseline-main.js' }

/** Each kind's environment beside PATH, HOME, PORT and HOST: no DATABASE_URL, so both keep their cats in memory. */
export function serverEnvironments (secret: string): Record<ServerKind, Record<string, string>> {
  const CATS_MAX = '2000000' // Room for the 1,000,000-cat prefill and the POST /cats runs.
  // One load generator is one client logging in as one user, and lists 50 at a time: the failed-login locks and the
  // cap on whole lists streamed at once would answer with cheap 429s and 503s, which the baseline does not send.
  const unlocked = { LOGIN_MAX_FAILURES: '1000000000', LOGIN_CLIENT_MAX_FAILURES: '1000000000', LIST_STREAMS_MAX: '1000' }
  return {
    service: { JWT_SECRET: secret, LOG_LEVEL: 'warn', METRICS_ENABLED: 'false', CATS_MAX, ...unlocked },
    baseline: { JWT_SECRET: secret, CATS_MAX }
  }
}

/** The baseline beside the dist/src modules it imports, so that it runs without tsx (40 MB, most of a second). */
export function compileBaseline (root: string): void {
  mkdirSync(join(root, 'dist', 'bench'), { recursive: true })
  for (const name of ['baseline-server', 'baseline-main']) {
    const source = readFileSync(join(root, 'bench', `${name}.ts`), 'utf8')
    const compilerOptions = { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 }
    writeFileSync(join(root, 'dist', 'bench', `${name}.js`), ts.transpileModule(source, { compilerOptions }).outputText)
  }
}

/** The checkout's commit, for the reports; `-dirty` when it has changes. */
export function describeCommit (root: string): string {
  const result = spawnSync('git', ['describe', '--always', '--dirty'], { cwd: root, encoding: 'utf8' })
  return result.status === 0 ? result.stdout.trim() : 'an unknown commit'
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }))

/** utime + stime of a process (all its threads), in seconds. */
export function cpuSeconds (pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The fields after the command name, which may hold spaces: utime and stime are the 14th and 15th of the line.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
}

/** One GET on a connection of its own; the status, or undefined when the connection fails. */
function getStatus (url: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, timeout: 1000 }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    })
    req.on('timeout', () => req.destroy())
    req.on('error', () => resolve(undefined))
    req.end()
  })
}

/** `root`: the child's working directory; `cpu`: pinned with taskset; `wrapper`: e.g. valgrind; `nodeArgs`: node's flags. */
export interface StartOptions { root: string, env: Record<string, string>, cpu?: number, wrapper?: string[], nodeArgs?: string[], timeoutMs?: number }

/** `startupMs`: from spawn to the first successful request. */
export interface RunningServer { kind: ServerKind, pid: number, url: string, startupMs: number, stop: () => Promise<void> }

/** Spawns a server and waits for its first 200 to GET /cats/0 (public; no cat has id 0). */
export async function startServer (kind: ServerKind, options: StartOptions): Promise<RunningServer> {
  const port = await closedPort()
  const logFile = join(os.tmpdir(), `cats-bench-${kind}-${port}.log`)
  const logFd = openSync(logFile, 'w')
  const node = [...options.wrapper ?? [], process.execPath, ...options.nodeArgs ?? [], COMMANDS[kind]]
  const argv = options.cpu === undefined ? node : ['taskset', '-c', String(options.cpu), ...node]
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env, PORT: String(port), HOST: '127.0.0.1' }
  const started = performance.now()
  const child = spawn(argv[0], argv.slice(1), { cwd: options.root, env, stdio: ['ignore', logFd, logFd] })
  closeSync(logFd)
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null
  const url = `http://127.0.0.1:${port}`
  while (await getStatus(`${url}/cats/0`) !== 200) {
    if (exited() || performance.now() - started > (options.timeoutMs ?? 30_000)) {
      child.kill('SIGKILL')
      throw new Error(`the ${kind} server did not start:\n${readFileSync(logFile, 'utf8').slice(-2000)}`)
    }
    await sleep(2)
  }
  const startupMs = performance.now() - started
  const stop = async (): Promise<void> => {
    if (!exited()) {
      const done = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await done
      clearTimeout(timer)
    }
    rmSync(logFile, { force: true })
  }
  return { kind, pid: child.pid ?? 0, url, startupMs, stop }
}
