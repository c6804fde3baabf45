/**
 * npm run bench:instructions [-- --starts N --requests N --only ids] — machine instructions per request
 * of the compiled service, the baseline and the Fastify floor with the service's headers,
 * counted by valgrind's callgrind. Unlike CPU time, the count of what a request's own code
 * does is not changed by other work on the machine, so it compares builds and servers to
 * about a percent where CPU time moves by tens. It leaves out the kernel (the socket reads and writes, about a third of a
 * small request's CPU time here) and the cost of cache misses, which CPU time includes:
 * it explains the CPU targets of `npm run bench`, it does not replace them.
 *
 * Work that timers do, not requests, is counted many times over: under callgrind a request takes
 * about fifty times as long, so a timer that fires every 10 ms fires fifty times as often per
 * request, and more so when other processes slow the server down; the garbage collector's share
 * varies alike. The service's own timer is load shedding's once-a-second sample, which reads and
 * resets Node's event-loop delay histogram: a fraction of a microsecond per second in real time,
 * but some 6k instructions per counted request here (about 4% of a small request, on the
 * service's side only). With metrics on, prom-client's default metrics add another sampler and a
 * GC observer, so metrics on is left out. For the same reason nothing else should run meanwhile.
 *
 * Each server is started `--starts` times (2, side by side) under callgrind: cats are created, 20,000
 * requests warm it up, the counters are zeroed, and `--requests` (10,000) more are
 * counted. A start now and then settles into a slower state of V8's compiled code (the
 * same server counting a third more or worse; one such state, nextTick's caches turned
 * megamorphic, is kept away on every server, see src/next-tick-shapes.ts), so the table
 * gives every start and the lowest, which is the steady state that most starts reach.
 */
import { randomBytes } from 'node:crypto'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { serverEnvironments } from './harness.js'
import { prefill, type LoadRequest } from './load.js'
import { findScenario, throughputScenarios } from './scenarios.js'
import { compileBaseline, startServer, type ServerKind } from './servers.js'

const root = join(import.meta.dirname, '..')
const { values } = parseArgs({
  options: { starts: { type: 'string', default: '2' }, requests: { type: 'string', default: '10000' }, only: { type: 'string' } }
})
const starts = Number(values.starts)
const counted = Number(values.requests)
const WARM_UP = 20_000
const log = (message: string): void => { process.stderr.write(`${message}\n`) }

if (spawnSync('valgrind', ['--version']).status !== 0) {
  log('valgrind is not installed: this count needs valgrind (Debian package valgrind).')
  process.exit(1)
}

const secret = randomBytes(32).toString('hex')
const environments = serverEnvironments(secret, 'warn')
const scenarios = throughputScenarios(secret)

interface Contender {
  name: string
  kind: ServerKind
  env: Record<string, string>
}

const baseline: Contender = { name: 'baseline (node:http, the service\'s headers)', kind: 'baseline', env: environments.baseline }
const floor: Contender = { name: 'Fastify floor + the service\'s headers', kind: 'floor', env: { ...environments.floor, FLOOR_HEADERS: '1' } }
// Under callgrind the event loop runs some fifty times slower: load shedding stays on, with a limit that it never reaches there.
const project: Contender = { name: 'the service', kind: 'project', env: { ...environments.project, MAX_EVENT_LOOP_DELAY_MS: '60000' } }

// The floor server answers only GET /profile, GET /cats/:id, POST /cats and PUT /cats/:id.
const allGroups: Array<{ scenarioId: string, contenders: Contender[] }> = [
  { scenarioId: 'profile', contenders: [baseline, floor, project] },
  { scenarioId: 'cat-read', contenders: [baseline, floor, project] },
  { scenarioId: 'cat-create', contenders: [baseline, floor, project] },
  { scenarioId: 'cat-update', contenders: [baseline, floor, project] }
]

// --only cat-read,cat-create counts those scenarios alone.
const only = values.only?.split(',')
const groups = only === undefined ? allGroups : allGroups.filter((group) => only.includes(group.scenarioId))
const unknown = only?.filter((id) => !allGroups.some((group) => group.scenarioId === id)) ?? []
if (unknown.length > 0) {
  log(`--only: no such scenario ${unknown.join(', ')}; these are counted: ${allGroups.map((group) => group.scenarioId).join(', ')}`)
  process.exit(1)
}

/**
 * The instructions the first callgrind dump in `dir` counted (its `totals:` line). callgrind_control
 * only asks for the dump: the server writes it when it next runs, so this waits for the file.
 */
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
async function countOnce (contender: Contender, cats: number, requests: LoadRequest[]): Promise<number> {
  const dir = mkdtempSync(join(os.tmpdir(), 'cats-callgrind-'))
  // callgrind_control reaches the server through files named by this prefix and by the user and host names
  // as the environment gives them (USER, HOST), so it runs with the server's environment for those.
  const vgdbPrefix = `--vgdb-prefix=${join(dir, 'vgdb')}`
  const server = await startServer(contender.kind, {
    root,
    cpu: undefined,
    env: contender.env,
    wrapper: ['valgrind', '--tool=callgrind', vgdbPrefix, `--callgrind-out-file=${join(dir, 'callgrind.out')}`],
    startTimeoutMs: 300_000
  })
  const control = (command: string): void => {
    execFileSync('callgrind_control', [vgdbPrefix, command, String(server.pid)],
      { stdio: 'ignore', env: { PATH: process.env.PATH, HOST: new URL(server.url).hostname } })
  }
  try {
    if (contender.kind !== 'floor') await prefill(server.url, cats, Infinity, 10)
    const run = async (amount: number): Promise<number> => {
      const result = await autocannon({ url: server.url, connections: 10, amount, timeout: 60, requests })
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${contender.name}: ${result.non2xx} non-2xx, ${result.errors} errors`)
      return result.requests.total
    }
    await run(WARM_UP)
    control('--zero')
    const answered = await run(counted)
    control('--dump')
    return await dumpedInstructions(dir) / answered
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

compileBaseline(root)
const thousands = (n: number): string => `${(n / 1000).toFixed(1)}k`
const lines = [
  `Instructions per request (callgrind; ${starts} starts of each server, ${WARM_UP.toLocaleString('en')} requests of warm-up, ` +
  `${counted.toLocaleString('en')} counted, 10 connections); ratio of the lowest to the baseline's lowest.`,
  '',
  '| Scenario | Server | per start | lowest | ratio |',
  '| --- | --- | --- | --- | --- |'
]
for (const { scenarioId, contenders } of groups) {
  const scenario = findScenario(scenarios, scenarioId)
  const requests = scenario.workload().requests
  let baselineLowest = Number.NaN
  for (const contender of contenders) {
    // The starts run side by side: a count does not depend on sharing the CPUs, only the wall time does.
    const counts = await Promise.all(Array.from({ length: starts }, async () => await countOnce(contender, scenario.cats, requests)))
    log(`[instructions ${scenarioId}] ${contender.name}: ${counts.map(thousands).join(', ')} per request`)
    const lowest = Math.min(...counts)
    if (contender === baseline) baselineLowest = lowest
    lines.push(`| ${scenario.title} | ${contender.name} | ${counts.map(thousands).join(', ')} | ${thousands(lowest)} | ${(lowest / baselineLowest).toFixed(2)} |`)
  }
}
console.log(lines.join('\n'))
