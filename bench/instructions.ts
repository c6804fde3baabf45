/**
 * npm run bench:instructions [-- --only ids --starts N --baseline]: machine instructions per request of the compiled
 * service per route, counted by valgrind's callgrind. CPU time moves by half between runs on a shared machine; this
 * count does not, so it is what a change is compared with (run it on both revisions, compare the tables). It leaves
 * out the kernel and what cache misses cost: it does not replace the CPU table of `npm run bench`.
 *
 * Per route and start: create the cats, send 20,000 requests of warm-up, zero the counters, count 10,000 more
 * (10 connections), divide by the requests answered. A start now and then settles into a slower state of V8's
 * compiled code, so each server starts twice, side by side, and the lowest count is the figure. Timers count many
 * times over (a request takes ~50× as long under callgrind): load shedding's sample adds some 6k per request.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { int } from './harness.js'
import { prefill, type LoadRequest } from './load.js'
import { scenarios } from './scenarios.js'
import { compileBaseline, describeCommit, serverEnvironments, startServer, type ServerKind } from './servers.js'

const ROUTES = ['profile', 'cat-read', 'cats-list', 'cat-create', 'cat-update', 'cat-delete-create']
const WARM_UP = 20_000
const COUNTED = 10_000

const { values } = parseArgs({ options: { only: { type: 'string' }, starts: { type: 'string', default: '2' }, baseline: { type: 'boolean' } } })
const log = (message: string): void => { process.stderr.write(`${message}\n`) }
const routes = values.only?.split(',') ?? ROUTES
if (routes.some((id) => !ROUTES.includes(id))) throw new Error(`--only takes some of: ${ROUTES.join(', ')}`)
if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('valgrind is not installed (Debian package valgrind)')

const root = join(import.meta.dirname, '..')
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
    wrapper: ['valgrind', '--tool=callgrind', vgdbPrefix, `--callgrind-out-file=${join(dir, 'callgrind.out')}`],
    timeoutMs: 300_000
  })
  const control = (command: string): void => {
    execFileSync('callgrind_control', [vgdbPrefix, command, String(server.pid)], { stdio: 'ignore', env: { PATH: process.env.PATH, HOST: '127.0.0.1' } })
  }
  try {
    await prefill(server.url, cats, Infinity, 10)
    const run = async (amount: number): Promise<number> => {
      const result = await autocannon({ url: server.url, connections: 10, amount, timeout: 60, requests })
      // Under callgrind on a busy machine a few requests fail (a socket closed) or are shed (503: a second of load
      // shedding passed without a sample of the loop's delay): up to 1% is tolerated, and logged.
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

/** The starts of one server side by side (a count does not depend on sharing the CPUs); every count, lowest first. */
async function counts (kind: ServerKind, cats: number, requests: LoadRequest[]): Promise<number[]> {
  // Settled, all of them: a start that fails leaves none of the others running.
  const starts = await Promise.allSettled(Array.from({ length: Number(values.starts) }, async () => await countOnce(kind, cats, requests)))
  return starts.map((start) => { if (start.status === 'rejected') throw start.reason; return start.value }).sort((a, b) => a - b)
}

compileBaseline(root)
const k = (n: number): string => `${(n / 1000).toFixed(1)}k`
const lines = [
  `Instructions per request of ${describeCommit(root)} (callgrind; lowest of ${values.starts} starts, ${int(WARM_UP)} requests of warm-up, ${int(COUNTED)} counted):`,
  '',
  `| Route | service | starts${values.baseline ? ' | baseline | ratio' : ''} |`,
  `| --- | --- | ---${values.baseline ? ' | --- | ---' : ''} |`
]
for (const scenario of scenarios(secret).filter((s) => routes.includes(s.id))) {
  const requests = scenario.requests()
  const service = await counts('service', scenario.cats, requests)
  log(`[instructions] ${scenario.title}: service ${service.map(k).join(', ')}`)
  const baseline = values.baseline ? await counts('baseline', scenario.cats, requests) : undefined
  if (baseline !== undefined) log(`[instructions] ${scenario.title}: baseline ${baseline.map(k).join(', ')}`)
  lines.push(`| ${scenario.title} | ${k(service[0])} | ${service.map(k).join(', ')}` +
    `${baseline === undefined ? '' : ` | ${k(baseline[0])} | ${(service[0] / baseline[0]).toFixed(2)}`} |`)
}
console.log(lines.join('\n'))
