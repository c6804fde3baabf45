import { spawn } from 'node:child_process'
import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Test } from 'tap'
import { TEST_SECRET } from './app.js'
import { rssBytes } from './proc.js'
import { baseEnv, plainNode } from './server.js'
import { adminClient, freshServerSchema } from './sql-schemas.js'

/**
 * The built service (dist/src, as `npm run build` leaves it) with the standalone server's options, in a
 * child process, its memory store filled directly: a million cats take seconds this way instead of a
 * minute of POSTs. The cats are created in turns of 10,000, then the child waits for the load-shedding
 * sample to settle before it listens.
 */
const FILLED_SERVER = `
import Fastify from 'fastify'
import fp from 'fastify-plugin'
const dist = process.env.SERVICE_DIST
const { default: app } = await import(dist + '/src/app.js')
const { loadConfig } = await import(dist + '/src/config.js')
const { serverOptions } = await import(dist + '/src/http/server-options.js')
const config = loadConfig(process.env)
const server = Fastify(serverOptions(config))
await server.register(fp(app), { config })
await server.ready()
const cats = Number(process.env.FILL_CATS)
const large = Number(process.env.FILL_LARGE_CATS)
const largeBytes = Number(process.env.FILL_LARGE_CAT_BYTES)
if (config.DATABASE_URL === undefined) {
  const largeName = 'x'.repeat(largeBytes)
  for (let index = 0; index < cats; index++) {
    // The memory store answers synchronously; the loop yields every 10,000 cats.
    server.catsStore.createJson({ name: index < large ? largeName : 'cat ' + index, age: index % 30, breed: 'Siamese' })
    if (index % 10000 === 9999) await new Promise((resolve) => setImmediate(resolve))
  }
} else {
  // The same cats, as the store writes them, in one statement on the service's (migrated) schema.
  const { default: pg } = await import('pg')
  const client = new pg.Client(config.DATABASE_URL)
  await client.connect()
  const schema = '"' + config.DATABASE_SCHEMA + '".'
  await client.query(\`INSERT INTO \${schema}cats (id, data) SELECT g, ('{"id":' || g || ',"name":"' ||
    CASE WHEN g <= $2 THEN repeat('x', $3) ELSE 'cat ' || (g - 1) END || '","age":' || ((g - 1) % 30) || ',"breed":"Siamese"}')::json
    FROM generate_series(1, $1::integer) AS g\`, [cats, large, largeBytes])
  await client.query(\`UPDATE \${schema}cats_count SET count = $1\`, [cats])
  await client.query(\`VACUUM ANALYZE \${schema}cats\`)
  await client.end()
}
await new Promise((resolve) => setTimeout(resolve, 1500))
await server.listen({ host: '127.0.0.1', port: 0 })
if (process.env.TIME_TURNS === 'true') {
  // The longest gap between two turns of a 2 ms timer since the parent last asked, the CPU time the process (all its
  // threads, the garbage collector's helpers too) used in it and the main thread's own (its schedstat, in ns): a gap
  // of little CPU is time the process was not running, not work it did. Also the most main-thread CPU of any gap.
  const { readFileSync } = await import('node:fs')
  const mainCpu = () => Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ', 1)[0]) / 1e6
  let wall = performance.now()
  let cpu = process.cpuUsage()
  let main = mainCpu()
  const none = { wallMs: 0, cpuMs: 0, mainMs: 0, mostMainMs: 0 }
  let longest = { ...none }
  setInterval(() => {
    const nowWall = performance.now()
    const nowCpu = process.cpuUsage()
    const nowMain = mainCpu()
    const wallMs = nowWall - wall
    const mainMs = nowMain - main
    if (wallMs > longest.wallMs) longest = { ...longest, wallMs, cpuMs: (nowCpu.user + nowCpu.system - cpu.user - cpu.system) / 1000, mainMs }
    if (mainMs > longest.mostMainMs) longest.mostMainMs = mainMs
    wall = nowWall
    cpu = nowCpu
    main = nowMain
  }, 2)
  process.on('SIGUSR2', () => {
    console.log('longest turn ' + JSON.stringify(longest))
    longest = { ...none }
  })
}
console.log('filled ' + server.server.address().port)
`

export interface FilledServerOptions {
  cats: number
  /** How many of the first cats have a name of `largeCatBytes` characters (the rest are about 55 bytes of JSON). */
  largeCats?: number
  largeCatBytes?: number
  /** Settings, on top of JWT_SECRET, CATS_MAX (the number of cats) and LOG_LEVEL=warn. */
  env?: Record<string, string>
  /** Whether the child times the turns of its event loop (see `longestTurn`; SIGUSR2 asks for it). */
  timeTurns?: boolean
  /** A PostgreSQL server: the cats are stored there, in a schema of the test's own (dropped on teardown). */
  databaseUrl?: string
  /** The one CPU the child may run on (taskset), so that the load of the test's own processes runs beside it. */
  cpu?: number
}

/** The longest time between two turns of the child's event loop, and the CPU time the child (and its main thread) used meanwhile. */
export interface LongestTurn {
  wallMs: number
  cpuMs: number
  /** The CPU time of the child's main thread alone in that longest turn. */
  mainMs: number
  /** The most CPU time the main thread used between any two turns (the turn of the most work, whatever its wall time). */
  mostMainMs: number
}

export interface FilledServer {
  port: number
  /** The child's resident set size now, in bytes (Linux). */
  rss: () => number
  /** Everything the child wrote so far. */
  output: () => string
  /** With `timeTurns`: the longest turn since the last call (or the start). */
  longestTurn: () => Promise<LongestTurn>
}

/** Starts a filled server that the test's teardown stops. */
export async function startFilledServer (t: Test, options: FilledServerOptions): Promise<FilledServer> {
  const { cats, largeCats = 0, largeCatBytes = 8000, env = {}, timeTurns = false, databaseUrl, cpu } = options
  const database = databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl, DATABASE_SCHEMA: await freshServerSchema(t, await adminClient(t, databaseUrl), 'filled') }
  const [command, args] = plainNode('--input-type=module', '-e', FILLED_SERVER)
  const child = spawn(cpu === undefined ? command : 'taskset', cpu === undefined ? args : ['-c', String(cpu), command, ...args], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: {
      ...baseEnv,
      SERVICE_DIST: pathToFileURL(join(import.meta.dirname, '..', '..', 'dist')).href,
      FILL_CATS: String(cats),
      FILL_LARGE_CATS: String(largeCats),
      FILL_LARGE_CAT_BYTES: String(largeCatBytes),
      JWT_SECRET: TEST_SECRET,
      CATS_MAX: String(Math.max(1, cats)),
      LOG_LEVEL: 'warn',
      TIME_TURNS: String(timeTurns),
      ...database,
      ...env
    }
  })
  t.teardown(() => new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve()
    else child.once('exit', () => resolve()).kill()
  }))
  let output = ''
  child.stderr.on('data', (chunk) => { output += String(chunk) })
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += String(chunk)
      const match = /filled (\d+)/.exec(output)
      if (match !== null) resolve(Number(match[1]))
    })
    child.once('exit', (code) => reject(new Error(`the filled server exited with ${code}: ${output}`)))
  })
  const rss = (): number => rssBytes(Number(child.pid))
  const longestTurn = (): Promise<LongestTurn> => new Promise((resolve) => {
    const answered = (chunk: Buffer): void => {
      const match = /longest turn (\{[^\n]*\})/.exec(String(chunk))
      if (match === null) return
      child.stdout.off('data', answered)
      resolve(JSON.parse(match[1]))
    }
    child.stdout.on('data', answered)
    child.kill('SIGUSR2')
  })
  return { port, rss, output: () => output, longestTurn }
}

/** A client that sends `GET <path>` and then never reads: the server's writes pile up until the socket is full. */
export function pausedReader (port: number, path = '/cats'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.pause()
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, () => resolve(socket))
    })
    socket.once('error', reject)
  })
}

/**
 * A client that sends `GET <path>`, reads the first bytes of the answer (so the response has begun), then stops
 * reading; with the first line of the answer.
 */
export function stalledReader (port: number, path = '/cats'): Promise<{ socket: Socket, statusLine: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`))
    socket.once('data', (chunk: Buffer) => {
      socket.pause()
      resolve({ socket, statusLine: chunk.toString('latin1', 0, 64).split('\r\n', 1)[0] })
    })
    socket.once('error', reject)
  })
}

/** Reads what a paused reader's socket holds (and whatever follows) until `enough` bytes, or until it closes; its first line. */
export function statusLineOf (socket: Socket, enough = 64): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const done = (): void => {
      socket.destroy()
      resolve(text.split('\r\n', 1)[0])
    }
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1', 0, Math.min(chunk.length, enough))
      if (text.length >= enough) done()
    })
    socket.once('close', done)
    socket.once('error', done)
    socket.resume()
  })
}

/** GET /cats read to its end: its status and how many bytes the body had. */
export function readWholeList (port: number): Promise<{ status: number, bytes: number }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/cats', agent: false }, (response) => {
      let bytes = 0
      response.on('data', (chunk: Buffer) => { bytes += chunk.length })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, bytes }))
      response.on('error', reject)
    }).on('error', reject).end()
  })
}
