import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { join } from 'node:path'
import type { Test } from 'tap'
import { TEST_SECRET } from './app.js'
import { cheapDemoUsers } from './cheap-users.js'

/** The bundled server, as `npm start` runs it. */
export const serverFile = join(import.meta.dirname, '..', '..', 'dist', 'server', 'src', 'server.js')
/**
 * The child runs the compiled files: keep their coverage out of the report of the .ts sources, and have tap's
 * process-info loader (which tap adds to every child's NODE_OPTIONS) record none of the files the child loads,
 * which halves what the loader adds to the server's start-up. `plainNode` below runs a child without the loader.
 */
export const baseEnv = { PATH: process.env.PATH, _TAPJS_PROCESSINFO_COVERAGE_: '0', _TAPJS_PROCESSINFO_EXCLUDE_: '/./' }

/**
 * `command args` without tap's process-info loader. Under tap every child process gets that loader in
 * NODE_OPTIONS, added after the options given to spawn, whatever they say; it follows each module the child
 * loads (for coverage, which is not reported for the compiled files) and about triples the CPU time of the
 * server's start. `env -u NODE_OPTIONS` runs it as `npm start` would.
 */
export function withoutTapLoader (command: string, args: readonly string[]): [string, string[]] {
  return ['env', ['-u', 'NODE_OPTIONS', command, ...args]]
}

/** `node ...args` without tap's process-info loader (see withoutTapLoader). */
export const plainNode = (...args: string[]): [string, string[]] => withoutTapLoader(process.execPath, args)

/**
 * Keep-alive settings for servers that a test stops with SIGTERM: the server then waits for its idle keep-alive
 * connections to close (test/http/graceful-shutdown.test.ts). fetch closes an idle connection 2 s before the
 * keep-alive timeout the server announces (in whole seconds), and keeps none open when that leaves no time; at the
 * default 5 s, a connection fetch has used holds the drain for 3 s.
 */
export const fetchKeepAlive = {
  /** fetch keeps no connection open after a response: none is left to drain. */
  none: { KEEP_ALIVE_TIMEOUT_MS: '1000' },
  /** fetch closes an idle connection after 1 s: the drain waits for it that long. */
  oneSecond: { KEEP_ALIVE_TIMEOUT_MS: '3000' }
}

/** A USERS_FILE of the demo accounts with cheap hashes (see cheap-users.ts), in the test's own directory. */
export async function cheapUsersFile (t: Test): Promise<string> {
  return join(t.testdir({ 'users.json': JSON.stringify(await cheapDemoUsers()) }), 'users.json')
}

export interface RunningServer {
  child: ChildProcessWithoutNullStreams
  base: string
  /** Everything the server wrote so far, stdout and stderr. */
  output: () => string
}

/** Starts the compiled server on a free port (PORT=0) and waits for its listening line; a variable given as undefined is unset. */
export async function startServer (env: Record<string, string | undefined> = {}, cwd?: string): Promise<RunningServer> {
  const variables = Object.entries({ ...baseEnv, JWT_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1', ...env }).filter(([, value]) => value !== undefined)
  const child = spawn(...plainNode(serverFile), { env: Object.fromEntries(variables), cwd })
  let output = ''
  child.stderr.on('data', (chunk) => { output += String(chunk) })
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += String(chunk)
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match !== null) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${output}`)))
  })
  return { child, base, output: () => output }
}

/**
 * The address a host app's child process prints once it listens (`listening at http://127.0.0.1:<port>`); rejects,
 * with what it printed, when it exits before.
 */
export async function hostAddress (child: ChildProcess, name: string): Promise<string> {
  let output = ''
  child.stderr?.on('data', (chunk) => { output += String(chunk) })
  return await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      output += String(chunk)
      const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match !== null) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}: ${output}`)))
  })
}
