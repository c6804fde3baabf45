/**
 * npm run bench:instructions [-- --only ids --starts N --baseline --root dir]: machine instructions per request of the
 * compiled service per route, counted by valgrind's callgrind, repeatable to about 1% from run to run on a busy
 * machine; see BENCHMARKS.md. Per route and start: create the route's cats, send WARM_UP requests, zero the counters,
 * send COUNTED more, dump. The median of the starts is the figure, the spread (max − min) / median beside it.
 *
 * What made the starts land up to a third apart, and what this does about each:
 * - Work done on the wall clock was counted: under callgrind a request takes ~50× as long, so timers (load
 *   shedding's 10 ms event-loop sampler, the Date header, socket timeouts) did 50× their share, more on a busier
 *   machine, and ran also between the zero and the dump. Only what runs inside libuv's poll phase is counted now
 *   (`--toggle-collect=uv__io_poll`): reading, answering and writing requests; not timers, immediates, or other
 *   threads. A request's work that a timer would do is not on any route here.
 * - V8 decided on the clock: optimizing on a background thread (whose code arrived after a varying number of
 *   requests), the heap's growth from measured GC and mutator speeds, idle-time and memory-reducing GCs.
 *   `--predictable` makes V8 single-threaded (optimization is synchronous: the counted code is optimized code, as
 *   before) and `--predictable-gc-schedule` fixes the heap's growth and semi-space size.
 * - Ten connections let a varying number of requests share one read and one turn of the loop: one connection now.
 * - The random ids of PUT are drawn from a fixed sequence (scenarios.ts), the same in every run.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { int, median } from './harness.js'
import { prefill, type LoadRequest } from './load.js'
import { scenarios } from './scenarios.js'
import { compileBaseline, describeCommit, serverEnvironments, startServer, type ServerKind } from './servers.js'

const ROUTES = ['profile', 'cat-read', 'cats-list', 'cat-create', 'cat-update', 'cat-delete-create']
const WARM_UP = 3_000
const COUNTED = 1_000
const NODE_ARGS = ['--predictable', '--predictable-gc-schedule']
const CALLGRIND = ['valgrind', '--tool=callgrind', '--toggle-collect=uv__io_poll']

const { values } = parseArgs({
  options: { only: { type: 'string' }, starts: { type: 'string', default: '3' }, baseline: { type: 'boolean' }, root: { type: 'string' } }
})
const log = (message: string): void => { process.stderr.write(`${message}\n`) }
const routes = values.only?.split(',') ?? ROUTES
if (routes.some((id) => !ROUTES.includes(id))) throw new Error(`--only takes some of: ${ROUTES.join(', ')}`)
if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('valgrind is not installed (Debian package valgrind)')

// --root: another checkout's build (its dist/, built there), counted by this script, as when comparing two revisions.
const root = resolve(values.root ?? join(import.meta.dirname, '..'))
const secret = randomBytes(32).toString('hex')
const environments = serverEnvironments(secret)
// Under callgrind the event loop runs some fifty times slower: load shedding stays on, with a limit it never reaches.
environments.service.MAX_EVENT_LOOP_DELAY_MS = '60000'

/** The instructions of the first dump in `dir`: callgrind_control only asks for it, the server writes it when next it runs. */
async function dumpedInstructions (dir: string): Promise<number> {
  for (let waited = 0; waited < 60_000; waited += 200) {
    const dump = readdirSync(dir).find((name) => name.endsWith('.1'))
    const totals = dump === undefined ? null : /^totals: (\d+)/m.exec(readFileSync(join(dir, dump), 'utf8'))
    if (totals !== null) return Number(totals[1])
    await sleep(200)
  }
  throw new Error(`no callgrind dump in ${dir} after 60 s`)
}

/** One start of a server under callgrind: instructions per counted request. */
async function countOnce (kind: ServerKind, cats: number, requests: LoadRequest[]): Promise<number> {
  const dir = mkdtempSync(join(os.tmpdir(), 'cats-callgrind-'))
  // callgrind_control finds the server through files named by this prefix, the user and the host name (HOST).
  const vgdbPrefix = `--vgdb-prefix=${join(dir, 'vgdb')}`
  const server = await startServer(kind, {
    root,
    env: environments[kind],
    wrapper: [...CALLGRIND, vgdbPrefix, `--callgrind-out-file=${join(dir, 'callgrind.out')}`],
    nodeArgs: NODE_ARGS,
    timeoutMs: 300_000
  })
  const control = (command: string): void => {
    execFileSync('callgrind_control', [vgdbPrefix, command, String(server.pid)], { stdio: 'ignore', env: { PATH: process.env.PATH, HOST: '127.0.0.1' } })
  }
  try {
    if (await prefill(server.url, cats, Infinity, 10) !== cats) throw new Error(`${kind}: the prefill fell short`)
    const run = async (amount: number): Promise<number> => {
      const result = await autocannon({ url: server.url, connections: 1, amount, timeout: 60, requests })
      // A few requests may fail (a socket closed) or be shed (503: a second passed without a sample of the loop's
      // delay, when the machine is busy): up to 1% is tolerated, and logged.
      const shed = result.statusCodeStats['503']?.count ?? 0
      const failed = `${result.errors} errors, ${JSON.stringify(result.statusCodeStats)}`
      if (result.non2xx > shed || result.errors + shed > amount / 100) throw new Error(`${kind}: ${failed}`)
      if (result.errors + shed > 0) log(`[instructions] ${kind}, ${amount} requests: ${failed}`)
      return result.requests.total
    }
    await run(WARM_UP)
    control('--zero')
    const answered = await run(COUNTED)
    control('--dump')
    return await dumpedInstructions(dir) / answered
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The starts of one server, two at a time (a count does not depend on sharing the CPUs); every count, lowest first. */
async function counts (kind: ServerKind, cats: number, requests: LoadRequest[]): Promise<number[]> {
  const all: number[] = []
  for (let done = 0; done < Number(values.starts); done += 2) {
    const batch = Math.min(2, Number(values.starts) - done)
    // Settled, all of them: a start that fails leaves none of the others running.
    const starts = await Promise.allSettled(Array.from({ length: batch }, async () => await countOnce(kind, cats, requests)))
    for (const start of starts) { if (start.status === 'rejected') throw start.reason; all.push(start.value) }
  }
  return all.sort((a, b) => a - b)
}

if (values.baseline === true) compileBaseline(root)
const k = (n: number): string => `${(n / 1000).toFixed(1)}k`
const spread = (all: number[]): string => `${((all[all.length - 1] - all[0]) / median(all) * 100).toFixed(1)}%`
const lines = [
  `Instructions per request of ${describeCommit(root)} (callgrind, poll phase only; median of ${values.starts} starts, ` +
    `${int(WARM_UP)} requests of warm-up, ${int(COUNTED)} counted, 1 connection):`,
  '',
  `| Route | service | spread | starts${values.baseline === true ? ' | baseline | ratio' : ''} |`,
  `| --- | --- | --- | ---${values.baseline === true ? ' | --- | ---' : ''} |`
]
for (const scenario of scenarios(secret).filter((s) => routes.includes(s.id))) {
  const requests = scenario.requests()
  const service = await counts('service', scenario.cats, requests)
  log(`[instructions] ${scenario.title}: service ${service.map(k).join(', ')}`)
  const baseline = values.baseline === true ? await counts('baseline', scenario.cats, requests) : undefined
  if (baseline !== undefined) log(`[instructions] ${scenario.title}: baseline ${baseline.map(k).join(', ')}`)
  lines.push(`| ${scenario.title} | ${k(median(service))} | ${spread(service)} | ${service.map(k).join(', ')}` +
    `${baseline === undefined ? '' : ` | ${k(median(baseline))} | ${(median(service) / median(baseline)).toFixed(2)}`} |`)
}
console.log(lines.join('\n'))
