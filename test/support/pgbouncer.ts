import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { accessSync, chmodSync, chownSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import { postgresClient, type SqlClient } from '../../src/db/sql-client.js'
import { closedPort } from './ports.js'
import pg from 'pg'

/**
 * Debian's PgBouncer (`apt-get install pgbouncer`, which .ci/run does), started by a test as a child process on
 * 127.0.0.1 and a free port, in front of the PostgreSQL server of TEST_DATABASE_URL: its default settings but the
 * pool mode, trust authentication of the URL's user, no Unix socket, its pid file and log in a temporary directory.
 * PgBouncer refuses to run as root: as root, it is started with `-u postgres` and its directory is that user's.
 * Stopped by its own PID on teardown.
 */

export type PoolMode = 'session' | 'transaction' | 'statement'

const CANDIDATES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer', '/usr/local/sbin/pgbouncer']

/** The pgbouncer executable, or why there is none. */
export function findPgBouncer (): { path: string } | { missing: string } {
  const onPath = (process.env.PATH ?? '').split(':').filter((dir) => dir !== '').map((dir) => join(dir, 'pgbouncer'))
  for (const path of [...onPath, ...CANDIDATES]) {
    try {
      accessSync(path, constants.X_OK)
      return { path }
    } catch {}
  }
  return { missing: 'pgbouncer is not installed (Debian: apt-get install pgbouncer; .ci/run installs it)' }
}

export interface PgBouncer {
  /** TEST_DATABASE_URL with PgBouncer's host and port: the same database and user, through the pooler. */
  url: string
  /** PgBouncer's log so far. */
  log: () => string
  pid: number
}

/** Waits until something accepts connections on the port, or the process has exited. */
async function listening (port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`pgbouncer exited (${String(child.exitCode ?? child.signalCode)}): ${log()}`)
    const connected = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => resolve(false))
    })
    if (connected) return
    await sleep(50)
  }
  throw new Error(`pgbouncer did not listen on 127.0.0.1:${port} within 10 s: ${log()}`)
}

/**
 * Starts PgBouncer in `mode` in front of `serverUrl`'s database; stopped (SIGTERM to its PID, then SIGKILL) on `t`'s
 * teardown. With `searchPath`, each server connection it opens sets it (`connect_query`), as a deployment whose
 * role has a default search_path: for suites whose statements do not name their schema. `serverParams` adds
 * settings of its [databases] entry (e.g. `timezone=…`).
 */
export async function startPgBouncer (t: Pick<Test, 'teardown'>, serverUrl: string, mode: PoolMode = 'transaction', settings: Record<string, string> = {}, searchPath?: string, serverParams = ''): Promise<PgBouncer> {
  const found = findPgBouncer()
  if ('missing' in found) throw new Error(found.missing)
  const server = new URL(serverUrl)
  const database = server.pathname.slice(1)
  const user = decodeURIComponent(server.username)
  const dir = mkdtempSync(join(tmpdir(), 'cats-pgbouncer-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const port = await closedPort()
  const logfile = join(dir, 'pgbouncer.log')
  const config = join(dir, 'pgbouncer.ini')
  const options: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'userlist.txt'),
    pidfile: join(dir, 'pgbouncer.pid'),
    logfile,
    pool_mode: mode,
    ...settings
  }
  const connectQuery = searchPath === undefined ? '' : ` connect_query='SET search_path TO ${searchPath}'`
  const target = `host=${server.hostname} port=${server.port === '' ? '5432' : server.port} dbname=${database} user=${user}${connectQuery}${serverParams === '' ? '' : ` ${serverParams}`}`
  writeFileSync(config, [
    '[databases]', `${database} = ${target}`, '[pgbouncer]', ...Object.entries(options).map(([name, value]) => `${name} = ${value}`), ''
  ].join('\n'))
  writeFileSync(options.auth_file, `"${user}" ""\n`)
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    // PgBouncer will not run as root ("PgBouncer should not run as root"): it switches to postgres, who must own its files.
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    for (const path of [dir, config, options.auth_file]) chownSync(path, uid, gid)
    chmodSync(dir, 0o700)
  }
  const child = spawn(found.path, [...(asRoot ? ['-u', 'postgres'] : []), config], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const log = (): string => {
    let file = ''
    try {
      file = readFileSync(logfile, 'utf8')
    } catch {}
    return `${output}${file}`
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(killer)
  })
  await listening(port, child, log)
  const url = new URL(serverUrl)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  // One statement through it before any test's own: PgBouncer opens its first server connection then, which on a
  // busy machine can take a good part of the service's 3 s deadline that the test's first statement would have.
  const warmUp = new pg.Client({ connectionString: url.href, connectionTimeoutMillis: 30_000 })
  await warmUp.connect()
  await warmUp.query('SELECT 1')
  await warmUp.end()
  return { url: url.href, log, pid: child.pid ?? 0 }
}

/** For a suite that needs PgBouncer and TEST_DATABASE_URL: the URL, or a comment that says plainly why it is skipped. */
export function pgBouncerTarget (t: Test, what: string): string | undefined {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (serverUrl === undefined || serverUrl === '') {
    t.comment(`TEST_DATABASE_URL is not set: ${what} through PgBouncer was skipped`)
    return undefined
  }
  const found = findPgBouncer()
  if ('missing' in found) {
    t.comment(`${found.missing}: ${what} through PgBouncer was skipped`)
    return undefined
  }
  return serverUrl
}

/** A pooled client (prepared statements off) through a PgBouncer of its own in transaction mode whose server sessions use `schema`; closed on teardown. */
export async function pooledClientIn (t: Test, serverUrl: string, schema: string, serverParams = ''): Promise<SqlClient> {
  const bouncer = await startPgBouncer(t, serverUrl, 'transaction', {}, schema, serverParams)
  const client = await postgresClient(bouncer.url, { pooled: true, preparedStatements: false })
  t.teardown(() => client.close())
  return client
}
