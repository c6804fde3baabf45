/**
 * npm run bench:instructions [-- --only ids --starts N --baseline --root dir --redis]: machine instructions per request of
 * the compiled service per route under callgrind, the lowest of a few starts; BENCHMARKS.md gives the method and why.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { int, median, REDIS_URL, table } from './harness.js'
import { prefill, type LoadRequest } from './load.js'
import { scenarios } from './scenarios.js'
import { compileBaseline, describeCommit, serverEnvironments, startServer, type ServerKind } from './servers.js'

const ROUTES = ['profile', 'cat-read', 'cats-list', 'cat-create', 'cat-update', 'cat-delete-create']
const WARM_UP = 10_000
const COUNTED = 1_500
const NODE_ARGS = ['--predictable', '--predictable-gc-schedule']
const CALLGRIND = ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--toggle-collect=uv__io_poll']

const options = { only: { type: 'string' }, starts: { type: 'string', default: '3' }, baseline: { type: 'boolean' }, root: { type: 'string' }, redis: { type: 'boolean' } } as const
const { values } = parseArgs({ options })
const routes = values.only?.split(',') ?? ROUTES
if (routes.some((id) => !ROUTES.includes(id))) throw new Error(`--only takes some of: ${ROUTES.join(', ')}`)
if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('valgrind is not installed (Debian package valgrind)')
const root = resolve(values.root ?? join(import.meta.dirname, '..')) // --root: another checkout's build, to compare
const secret = randomBytes(32).toString('hex')
const environments = serverEnvironments(secret)
// Load shedding stays on (its per-request check is counted) on the heap only: the delay check sheds on the wall clock.
Object.assign(environments.service, { MAX_EVENT_LOOP_DELAY_MS: '0', MAX_HEAP_USED_BYTES: String(2 ** 50) })
// --redis: the denylist and the login counters in the Redis of BENCH_REDIS_URL, under a prefix of this run's own.
if (values.redis === true) Object.assign(environments.service, { REDIS_URL, REDIS_KEY_PREFIX: `bench-${randomBytes(6).toString('hex')}:` })

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
    timeoutMs: 900_000
  })
  const control = (command: string): void => {
    execFileSync('callgrind_control', [vgdbPrefix, command, String(server.pid)], { stdio: 'ignore', env: { PATH: process.env.PATH, HOST: '127.0.0.1' } })
  }
  try {
    if (await prefill(server.url, cats, Infinity, 10) !== cats) throw new Error(`${kind}: the prefill fell short`)
    const run = async (amount: number): Promise<number> => {
      const result = await autocannon({ url: server.url, connections: 1, amount, timeout: 60, requests })
      // Up to 1% may fail (a socket closed) or be shed (503: no sample of the loop's delay for a second), logged.
      const shed = result.statusCodeStats?.['503']?.count ?? 0
      const failed = `${result.errors} errors, ${JSON.stringify(result.statusCodeStats)}`
      if (result.non2xx > shed || result.errors + shed > Math.max(1, amount / 100)) throw new Error(`${kind}: ${failed}`)
      if (result.errors + shed > 0) process.stderr.write(`[instructions] ${kind}, ${amount} requests: ${failed}\n`)
      return result.requests.total
    }
    await run(WARM_UP)
    control('--instr=on')
    await run(20) // Collection starts as the loop next enters its poll phase: while idle, it waits inside it.
    control('--zero')
    const answered = await run(COUNTED)
    control('--dump')
    return await dumpedInstructions(dir) / answered
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The starts of one server side by side (a count does not depend on sharing the CPUs); every count, lowest first. */
async function counts (kind: ServerKind, cats: number, requests: LoadRequest[]): Promise<number[]> {
  // Settled, all of them: a start that fails leaves none of the others running.
  const starts = await Promise.allSettled(Array.from({ length: Number(values.starts) }, async () => await countOnce(kind, cats, requests)))
  return starts.map((start) => { if (start.status === 'rejected') throw start.reason; return start.value }).sort((a, b) => a - b)
}

if (values.baseline === true) compileBaseline(root)
const k = (n: number): string => `${(n / 1000).toFixed(1)}k`
const spread = (all: number[]): string => `${((all[all.length - 1] - all[0]) / median(all) * 100).toFixed(1)}%`
const rows: string[][] = []
for (const scenario of scenarios(secret).filter((s) => routes.includes(s.id))) {
  const requests = scenario.requests()
  const service = await counts('service', scenario.cats, requests)
  const baseline = values.baseline === true ? await counts('baseline', scenario.cats, requests) : undefined
  process.stderr.write(`[instructions] ${scenario.title}: service ${service.map(k).join(', ')}${baseline === undefined ? '' : `; baseline ${baseline.map(k).join(', ')}`}\n`)
  rows.push([scenario.title, k(service[0]), spread(service), service.map(k).join(', '),
    ...baseline === undefined ? [] : [k(baseline[0]), (service[0] / baseline[0]).toFixed(2)]])
}
console.log(`Instructions per request of ${describeCommit(root)}${values.redis === true ? ' with Redis' : ''} (callgrind, poll phase only; lowest of ${values.starts} starts, ` +
  `${int(WARM_UP)} requests of warm-up, ${int(COUNTED)} counted, 1 connection):\n\n` +
  table(['Route', 'service', 'spread', 'starts', ...values.baseline === true ? ['baseline', 'ratio'] : []], rows))
