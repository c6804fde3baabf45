import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import ts from 'typescript'
import { cpuSeconds } from './proc.js'

export type ServerKind = 'project' | 'baseline' | 'floor'

export interface StartOptions {
  /** Repository root: the working directory of the child. */
  root: string
  /** CPU to pin the server to with taskset; undefined runs it unpinned. */
  cpu: number | undefined
  /** Environment for the child, on top of PATH and HOME. */
  env: Record<string, string>
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[]
  /** Runs the project's unbundled build (dist/src/server.js), whose file names tell the packages apart in a profile. */
  unbundled?: boolean
  /** A command that runs node, before it: e.g. valgrind and its options. */
  wrapper?: string[]
  /** How long the first successful request may take; 30 s by default. */
  startTimeoutMs?: number
}

export interface RunningServer {
  kind: ServerKind
  pid: number
  url: string
  /** Milliseconds from spawn to the first successful request. */
  startupMs: number
  /** CPU milliseconds the server used until then (all its threads): unlike the wall time, hardly affected by other processes. */
  startupCpuMs: number
  /** performance.now() at spawn. */
  spawnedAt: number
  stop: () => Promise<void>
}

const COMMANDS: Record<ServerKind, string[]> = {
  // The bundled service, as `npm start` runs it.
  project: ['dist/server/src/server.js'],
  // Compiled by compileBaseline(), beside dist/src whose domain modules it imports.
  baseline: ['dist/bench/baseline-main.js'],
  // Likewise; see bench/floor-server.ts.
  floor: ['dist/bench/floor-main.js']
}

/**
 * Transpiles the baseline into dist/bench/, so that it imports the same compiled
 * domain modules as the service (dist/src) and runs without a loader. Under
 * `node --import tsx` it works alike, but the loader's thread and esbuild
 * add about 40 MB of RSS and most of a second of start-up to the baseline.
 */
export function compileBaseline (root: string): void {
  const outDir = join(root, 'dist', 'bench')
  mkdirSync(outDir, { recursive: true })
  for (const name of ['baseline-server', 'baseline-main', 'floor-server', 'floor-main']) {
    const source = readFileSync(join(root, 'bench', `${name}.ts`), 'utf8')
    const { outputText } = ts.transpileModule(source, {
      fileName: `${name}.ts`,
      compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 }
    })
    writeFileSync(join(outDir, `${name}.js`), outputText)
  }
}

/** A port that is free right now on 127.0.0.1. */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

/** One GET; resolves to the status, or undefined when the connection fails. */
export function getStatus (url: string): Promise<number | undefined> {
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

function exited (child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null
}

/**
 * Spawns a server (pinned with taskset when `cpu` is set) and waits for its
 * first successful request, which is the start-up time. Stops it by its PID.
 */
export async function startServer (kind: ServerKind, options: StartOptions): Promise<RunningServer> {
  const port = await freePort()
  const logFile = join(os.tmpdir(), `cats-bench-${kind}-${port}.log`)
  const log = openSync(logFile, 'w')
  const command = options.unbundled === true && kind === 'project' ? ['dist/src/server.js'] : COMMANDS[kind]
  const node = [...(options.wrapper ?? []), process.execPath, ...(options.nodeArgs ?? []), ...command]
  const argv = options.cpu === undefined ? node : ['taskset', '-c', String(options.cpu), ...node]
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env, PORT: String(port), HOST: '127.0.0.1' }

  const started = performance.now()
  const child = spawn(argv[0], argv.slice(1), { cwd: options.root, env, stdio: ['ignore', log, log] })
  closeSync(log)
  const logTail = (): string => readFileSync(logFile, 'utf8').slice(-2000)

  const url = `http://127.0.0.1:${port}`
  let startupMs: number | undefined
  let startupCpuMs = 0
  while (startupMs === undefined) {
    if (exited(child)) throw new Error(`${kind} server exited during start-up:\n${logTail()}`)
    const { startTimeoutMs = 30_000 } = options
    if (performance.now() - started > startTimeoutMs) {
      child.kill('SIGKILL')
      throw new Error(`${kind} server did not answer within ${startTimeoutMs / 1000} s:\n${logTail()}`)
    }
    // GET /cats/0 is public and answers 200 (no cat has id 0) on both servers.
    if (await getStatus(`${url}/cats/0`) === 200) {
      startupMs = performance.now() - started
      startupCpuMs = cpuSeconds(child.pid ?? 0) * 1000
    } else await sleep(2)
  }

  const pid = child.pid
  if (pid === undefined) throw new Error(`${kind} server has no pid`)

  async function stop (): Promise<void> {
    if (!exited(child)) {
      const done = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await done
      clearTimeout(timer)
    }
    rmSync(logFile, { force: true })
  }

  return { kind, pid, url, startupMs, startupCpuMs, spawnedAt: started, stop }
}
