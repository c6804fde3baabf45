import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { availableParallelism, loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t, { type Test } from 'tap'
import { startFilledServer } from '../support/filled-server.js'

// Five concurrent GET /cats at 1,000,000 cats (the first 10,000 of about 8 KB: 140 MB each) must keep other
// requests under 50 ms (a page of 1,000 of the large cats is 8 MB, a chunk at most 64 KiB): GET /health
// is sent every 5 ms on a kept-alive connection while they stream, in three rounds. The lists are read by
// another process, so that reading 300 MB does not delay this one's probes. On a machine with more runnable
// processes than cores every pause stretches by about that ratio, so the probes' bound is scaled by the load
// per core when it exceeds one (as in test/routes/cats-large-list.test.ts). What the server itself does is
// bounded without that allowance: the most CPU time its main thread used in one turn of the event loop (a turn that
// took long in wall time but little CPU time is one in which the thread was not running; the process's other threads,
// the garbage collector's helpers among them, share its one CPU and are printed, not bounded). The server runs on CPU 1
// alone and the load (this process and the list readers) on CPU 0, so the load does not take the server's CPU; so does
// PostgreSQL while it serves the test (its processes are moved to CPU 0 and back), as a database on its own host would.
// Once with the memory store, once with PostgreSQL when TEST_DATABASE_URL is set.

const CATS = 1_000_000
const LARGE_CATS = 10_000
const LISTS = 5
const ROUNDS = 3
const PROBE_EVERY_MS = 5
const SERVER_CPU = 1
const LOAD_CPU = 0

// This process (the probes) and the list readers it starts run on the load's CPU.
spawnSync('taskset', ['-cp', String(LOAD_CPU), String(process.pid)])

/** The parent PID of a process (Linux). */
const parentOf = (pid: number): number => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1])

/**
 * Moves the PostgreSQL server behind `databaseUrl` (its postmaster, whose new backends inherit the mask, and every
 * process it has started) to `cpu` until `t` ends, then gives each of them back the CPUs it had.
 */
async function pinDatabase (t: Test, databaseUrl: string, cpu: number): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
  const postmaster = parentOf(rows[0].pid)
  await client.end()
  const pids = [postmaster, ...readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => {
    try { return parentOf(pid) === postmaster } catch { return false }
  })]
  const masks = new Map(pids.map((pid) => [pid, /: ([0-9a-f]+)$/.exec(spawnSync('taskset', ['-p', String(pid)], { encoding: 'utf8' }).stdout.trim())?.[1]]))
  for (const pid of pids) spawnSync('taskset', ['-a', '-cp', String(cpu), String(pid)])
  t.teardown(() => {
    for (const [pid, mask] of masks) if (mask !== undefined) spawnSync('taskset', ['-a', '-p', mask, String(pid)])
  })
}

/** Reads `lists` whole lists at once over raw sockets and prints each one's bytes. */
const LIST_READERS = `
import { connect } from 'node:net'
const [port, lists] = process.argv.slice(1).map(Number)
let open = lists
for (let index = 0; index < lists; index++) {
  let bytes = 0
  const socket = connect(port, '127.0.0.1', () => socket.write('GET /cats HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n'))
  socket.on('data', (chunk) => { bytes += chunk.length })
  socket.on('close', () => {
    console.log(bytes)
    if (--open === 0) process.exit(0)
  })
}
`

/** The byte counts of `lists` whole lists read at once by a child process. */
function readLists (port: number, lists: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', ['-c', String(LOAD_CPU), process.execPath, '--input-type=module', '-e', LIST_READERS, String(port), String(lists)], { env: { PATH: process.env.PATH } })
    let output = ''
    child.stdout.on('data', (chunk) => { output += String(chunk) })
    child.once('error', reject)
    child.once('exit', () => resolve(output.trim().split('\n').map(Number)))
  })
}

const stores = [['memory', undefined], ['PostgreSQL', process.env.TEST_DATABASE_URL]] as const
for (const [store, databaseUrl] of stores) {
  t.test(`${LISTS} concurrent whole lists at ${CATS.toLocaleString('en')} cats (${store}) keep GET /health under 50 ms`, { skip: store !== 'memory' && databaseUrl === undefined ? 'TEST_DATABASE_URL is not set' : false }, async (t) => {
    if (databaseUrl !== undefined) await pinDatabase(t, databaseUrl, LOAD_CPU)
    const server = await startFilledServer(t, { cats: CATS, largeCats: LARGE_CATS, timeTurns: true, databaseUrl, cpu: SERVER_CPU })
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    t.teardown(() => agent.destroy())
    const probe = (): Promise<{ status: number, ms: number }> => new Promise((resolve, reject) => {
      const sent = performance.now()
      request({ host: '127.0.0.1', port: server.port, path: '/health', agent }, (response) => {
        response.resume()
        response.on('end', () => resolve({ status: response.statusCode ?? 0, ms: performance.now() - sent }))
      }).on('error', reject).end()
    })

    // A first round unmeasured: the code the lists run is compiled by then.
    await readLists(server.port, LISTS)
    t.equal((await probe()).status, 200)

    let slowest = 0
    let mostCpu = 0
    let longestWall = 0
    for (let round = 1; round <= ROUNDS; round++) {
      await server.longestTurn()
      const progress = { done: false }
      const started = performance.now()
      const lists = readLists(server.port, LISTS).finally(() => { progress.done = true })
      const probes: number[] = []
      let failed = 0
      while (!progress.done) {
        const { status, ms } = await probe()
        if (status !== 200) failed++
        probes.push(ms)
        await sleep(PROBE_EVERY_MS)
      }
      t.equal(failed, 0, 'every GET /health was a 200')
      const bytes = await lists
      const listMs = performance.now() - started
      const turn = await server.longestTurn()
      mostCpu = Math.max(mostCpu, turn.mostMainMs)
      longestWall = Math.max(longestWall, turn.wallMs)
      const roundSlowest = Math.max(...probes)
      slowest = Math.max(slowest, roundSlowest)
      const sorted = [...probes].sort((a, b) => a - b)
      t.comment(`round ${round}: ${LISTS} lists of ${(bytes[0] / 1e6).toFixed(1)} MB in ${listMs.toFixed(0)} ms; ${probes.length} probes, ` +
      `median ${sorted[probes.length >> 1].toFixed(1)} ms, p99 ${sorted[Math.floor(probes.length * 0.99)].toFixed(1)} ms, slowest ${roundSlowest.toFixed(1)} ms; ` +
      `the server's longest turn ${turn.wallMs.toFixed(1)} ms, ${turn.cpuMs.toFixed(1)} ms of CPU (${turn.mainMs.toFixed(1)} ms on the main thread); the most main-thread CPU in a turn ${turn.mostMainMs.toFixed(1)} ms; load per core ${(loadavg()[0] / availableParallelism()).toFixed(1)}`)
      t.ok(bytes.length === LISTS && bytes.every((count) => count > 50 * CATS), 'every list was read whole')
      t.ok(probes.length >= 10, 'other requests were answered while the lists streamed')
    }
    const bound = 50 * Math.max(1, loadavg()[0] / availableParallelism())
    t.ok(slowest < bound, `the slowest GET /health (${slowest.toFixed(1)} ms) is under ${bound.toFixed(0)} ms`)
    t.comment(`${store}: the slowest GET /health ${slowest.toFixed(1)} ms; the server's longest turn ${longestWall.toFixed(1)} ms; the most main-thread CPU in a turn ${mostCpu.toFixed(1)} ms`)
    t.ok(mostCpu < 50, `no turn of the server's main thread used more than ${mostCpu.toFixed(1)} ms of CPU, under 50 ms`)
  })
}
