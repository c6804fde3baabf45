import type { Measurement, PrefillResult, ProbeResult } from './load.js'
import type { MachineInfo } from './proc.js'
import type { StoresResult } from './stores.js'

/** One server's results in one scenario: medians over the measured runs of all its starts. */
export interface SideSummary {
  reqPerSec: number
  latencyP50: number
  latencyP99: number
  /** Summed over the runs. */
  non2xx: number
  errors: number
  cpuMicrosPerRequest: number
  bytesPerSec: number
  serverBusy: number
  otherLoad: number
  /** VmHWM at the end of the scenario, bytes. */
  peakRss: number
  samples: Measurement[]
}

export interface ScenarioResult {
  id: string
  title: string
  /** Highest allowed CPU-per-request ratio; undefined when the scenario has no target. */
  target: number | undefined
  project: SideSummary
  baseline: SideSummary
  /** project / baseline */
  ratios: { reqPerSec: number, cpuPerRequest: number, latencyP99: number }
  /**
   * The project with METRICS_ENABLED=true against the baseline with BASELINE_METRICS=1, which observes the same
   * histogram (scenarios with a target only); `againstBaselineWithout` is the project's figure over the baseline without.
   */
  metricsOn?: { project: SideSummary, baseline: SideSummary, cpuPerRequest: number, againstBaselineWithout: number }
  /** Both CPU ratios, metrics off and on, within the target. */
  pass: boolean | undefined
}

export interface FloodSide {
  idle: ProbeResult
  flood: ProbeResult
  /** flood p99 / idle p99 */
  p99Ratio: number
  login: { requests: number, non2xx: number, errors: number, timeouts: number, statusCodes: Record<string, number> }
}

export interface FloodResult {
  connections: number
  seconds: number
  project: FloodSide
  baseline: FloodSide
  target: number
  pass: boolean
}

export type ScalingOp = 'get' | 'put' | 'delete'

export interface ScalingStep {
  size: number
  prefill: PrefillResult
  /** RSS of this size's server after its prefill, bytes. */
  rss: number
  /** (RSS now - RSS of the same server when empty) / size */
  rssPerCat: number
  /** (RSS now - RSS of the previous size's server) / the cats it holds more: the cost of one more cat. */
  marginalRssPerCat: number
  /** The medians of each operation's rounds at this size (peak RSS: the server's after them). */
  ops: Record<ScalingOp, SideSummary>
}

export interface ScalingResult {
  /** Median RSS of the servers before their prefill, bytes. */
  emptyRss: number
  steps: ScalingStep[]
  /** Highest / lowest CPU per request over the sizes, per operation. */
  spread: Record<ScalingOp, number>
  target: number
  pass: Record<ScalingOp, boolean>
}

export interface StartupStats {
  /** Wall milliseconds of each start. */
  samples: number[]
  median: number
  min: number
  max: number
  /** The server's own CPU milliseconds until its first answer, median of the starts. */
  cpuMedian: number
}

export interface StartupResult {
  project: StartupStats
  baseline: StartupStats
  /** The project's wall-time median must be at most this many milliseconds. */
  target: number
  pass: boolean
}

/** A scenario on seven servers side by side: how much of the ratio is Fastify itself, the response headers and the metrics hook. */
export interface FloorResult {
  title: string
  baseline: SideSummary
  /** The baseline without the service's security headers and request id. */
  bareBaseline: SideSummary
  /** bench/floor-server.ts: the route on Fastify, nothing else. */
  bare: SideSummary
  /** The same plus the service's security headers and request id. */
  headers: SideSummary
  /** The same plus the request-duration histogram the service observes with metrics on. */
  headersMetrics: SideSummary
  /**
   * The floor with the headers plus the service's production features from Fastify and its plugins: its logger
   * and server options, load shedding, the draining hook, Ajv validation of the id and the update's body.
   */
  headersFeatures: SideSummary
  project: SideSummary
  /** The service with METRICS_ENABLED=true. */
  projectMetrics: SideSummary
}

export interface BenchReport {
  generatedAt: string
  mode: 'quick' | 'full'
  machine: MachineInfo
  loadAverageAtStart: number[]
  settings: Record<string, string | number | boolean>
  scenarios: ScenarioResult[]
  login: ScenarioResult | undefined
  flood: FloodResult | undefined
  scaling: ScalingResult | undefined
  /** Memory vs PostgreSQL store (bench/stores.ts); its tables come from storesMarkdown(). */
  stores: StoresResult | undefined
  floors: FloorResult[]
  startup: StartupResult
}

export function median (values: number[]): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

export function summarize (samples: Measurement[], peakRss: number): SideSummary {
  const sum = (pick: (m: Measurement) => number): number => samples.reduce((total, m) => total + pick(m), 0)
  const mid = (pick: (m: Measurement) => number): number => median(samples.map(pick))
  return {
    reqPerSec: mid((m) => m.reqPerSec),
    latencyP50: mid((m) => m.latencyP50),
    latencyP99: mid((m) => m.latencyP99),
    non2xx: sum((m) => m.non2xx),
    errors: sum((m) => m.errors),
    cpuMicrosPerRequest: mid((m) => m.cpuMicrosPerRequest),
    bytesPerSec: mid((m) => m.bytesPerSec),
    serverBusy: mid((m) => m.serverBusy),
    otherLoad: mid((m) => m.otherLoad),
    peakRss,
    samples
  }
}

/** Start-up times in ms (wall and CPU of each start), the wall samples rounded to 0.1 ms. */
export function startupStats (starts: Array<{ wallMs: number, cpuMs: number }>): StartupStats {
  const samples = starts.map((start) => start.wallMs)
  return {
    samples: samples.map((ms) => Math.round(ms * 10) / 10),
    median: median(samples),
    min: samples.length === 0 ? 0 : Math.min(...samples),
    max: samples.length === 0 ? 0 : Math.max(...samples),
    cpuMedian: median(starts.map((start) => start.cpuMs))
  }
}

const ratio = (a: number, b: number): number => (b === 0 ? 0 : a / b)

export function compare (id: string, title: string, target: number | undefined, project: SideSummary, baseline: SideSummary,
  withMetrics?: { project: SideSummary, baseline: SideSummary }): ScenarioResult {
  const ratios = {
    reqPerSec: ratio(project.reqPerSec, baseline.reqPerSec),
    cpuPerRequest: ratio(project.cpuMicrosPerRequest, baseline.cpuMicrosPerRequest),
    latencyP99: ratio(project.latencyP99, baseline.latencyP99)
  }
  const metricsOn = withMetrics === undefined
    ? undefined
    : {
        ...withMetrics,
        cpuPerRequest: ratio(withMetrics.project.cpuMicrosPerRequest, withMetrics.baseline.cpuMicrosPerRequest),
        againstBaselineWithout: ratio(withMetrics.project.cpuMicrosPerRequest, baseline.cpuMicrosPerRequest)
      }
  const pass = target === undefined ? undefined : ratios.cpuPerRequest <= target && (metricsOn === undefined || metricsOn.cpuPerRequest <= target)
  return { id, title, target, project, baseline, ratios, ...(metricsOn !== undefined && { metricsOn }), pass }
}

/**
 * The CPU ratio of each run of `project` to the run of `baseline` at the same place (the same start and round: the
 * servers of a start are measured back to back), as median, lowest and highest. A slow period of the host that
 * slows every server of a start cancels out of these; a start of one server that settled slower does not.
 */
export function pairedRatios (project: SideSummary, baseline: SideSummary): { median: number, min: number, max: number } {
  const ratios = project.samples.map((run, index) => ratio(run.cpuMicrosPerRequest, baseline.samples[index].cpuMicrosPerRequest))
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) }
}

const int = (n: number): string => Math.round(n).toLocaleString('en-US')
const dec = (n: number, digits = 2): string => n.toFixed(digits)
const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(1)
const verdict = (pass: boolean | undefined): string => (pass === undefined ? '—' : pass ? '**PASS**' : '**FAIL**')
const targetCell = (target: number | undefined): string => (target === undefined ? '—' : `≤ ${dec(target)}`)

export function table (header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

function scenarioRow (s: ScenarioResult): string[] {
  const { project: p, baseline: b } = s
  return [
    s.title,
    int(p.reqPerSec), int(b.reqPerSec), dec(s.ratios.reqPerSec),
    `${p.latencyP50} / ${b.latencyP50}`, `${p.latencyP99} / ${b.latencyP99}`,
    `${int(p.non2xx)} / ${int(b.non2xx)}`,
    dec(p.cpuMicrosPerRequest, 1), dec(b.cpuMicrosPerRequest, 1), dec(s.ratios.cpuPerRequest),
    s.metricsOn === undefined
      ? '—'
      : `${dec(s.metricsOn.project.cpuMicrosPerRequest, 1)} / ${dec(s.metricsOn.baseline.cpuMicrosPerRequest, 1)} ` +
        `(${dec(s.metricsOn.cpuPerRequest)}; ${dec(s.metricsOn.againstBaselineWithout)} to B without)`,
    targetCell(s.target), verdict(s.pass)
  ]
}

const SCENARIO_HEADER = [
  'Scenario', 'req/s project', 'req/s baseline', 'req/s ratio', 'p50 ms (P / B)', 'p99 ms (P / B)',
  'non-2xx (P / B)', 'CPU µs/req project', 'CPU µs/req baseline', 'CPU ratio', 'metrics on: µs/req P / B (ratio)', 'Target', 'Result'
]

/** The whole report as markdown: the tables that BENCHMARKS.md shows. */
export function markdown (report: BenchReport): string {
  const parts: string[] = []
  const { machine, settings } = report
  parts.push(`Run ${report.generatedAt} (${report.mode}, ${settings.totalSeconds} s): ${machine.cpuModel} × ${machine.cpus} CPUs, ` +
    `${machine.memoryGiB} GiB, ${machine.platform}, kernel ${machine.kernel}, Node ${machine.node} (V8 ${machine.v8}); ` +
    `${settings.pinned === true ? 'server pinned to CPU 0 and load generator to CPU 1 with taskset' : 'nothing pinned'}; ` +
    `${settings.starts} starts of each server per scenario, each measured in ${settings.rounds} round(s) of ` +
    `${settings.secondsPerRun} s (servers interleaved), each run straight after the server's warm-up ` +
    `(${settings.warmupSeconds} s before the first round, ${settings.leadInSeconds} s before later ones), ` +
    `${settings.connections} connections; project LOG_LEVEL=${settings.projectLogLevel}; ` +
    `load average at start ${report.loadAverageAtStart.map((l) => l.toFixed(2)).join(' ')}; ` +
    `runs measured again because other processes used more than 0.25 CPU: ${settings.remeasuredBusyRuns}.`)
  parts.push('### Project vs. baseline (ratio = project / baseline; medians of the runs over all starts)\n\n' +
    table(SCENARIO_HEADER, report.scenarios.map(scenarioRow)))

  const paired = (project: SideSummary, baseline: SideSummary): string => {
    const { median: middle, min, max } = pairedRatios(project, baseline)
    return `${dec(middle)} (${dec(min)}–${dec(max)})`
  }
  parts.push('### The same CPU ratios paired within a start (median of the runs\' ratios, lowest–highest)\n\n' +
    'Each run of the project divided by the baseline\'s run of the same start and round (see Method, Paired within ' +
    'a start); the verdict above stays on the ratio of the medians.\n\n' + table(
    ['Scenario', 'metrics off', 'metrics on', 'CPU ratio (off / on)', 'Target'],
    report.scenarios.filter((s) => s.target !== undefined).map(({ title, project, baseline, ratios, metricsOn, target }) => [
      title, paired(project, baseline), metricsOn === undefined ? '—' : paired(metricsOn.project, metricsOn.baseline),
      `${dec(ratios.cpuPerRequest)} / ${metricsOn === undefined ? '—' : dec(metricsOn.cpuPerRequest)}`, targetCell(target)
    ])))

  if (report.login !== undefined) {
    parts.push('### POST /auth/login (bound by the scrypt password hash by design; no target)\n\n' +
      table(SCENARIO_HEADER, [scenarioRow(report.login)]))
  }

  const all = [...report.scenarios, ...(report.login === undefined ? [] : [report.login])]
  const percent = (n: number): string => `${Math.round(n * 100)}%`
  const conditions = table(
    ['Scenario', 'peak RSS MiB project', 'peak RSS MiB baseline', 'RSS ratio', 'response bytes/s (P / B)',
      'server busy (P / B)', 'other processes (P / B runs)'],
    all.map((s) => [s.title, mib(s.project.peakRss), mib(s.baseline.peakRss), dec(ratio(s.project.peakRss, s.baseline.peakRss)),
      `${int(s.project.bytesPerSec)} / ${int(s.baseline.bytesPerSec)}`,
      `${percent(s.project.serverBusy)} / ${percent(s.baseline.serverBusy)}`,
      `${dec(s.project.otherLoad)} / ${dec(s.baseline.otherLoad)}`])
  )
  parts.push('### Memory and run conditions\n\n' +
    'Peak RSS is VmHWM at the end of the scenario. Server busy is server CPU seconds per second (100% = saturated). ' +
    'Other processes is the CPU (in cores) that the rest of the machine used meanwhile: 0 on a quiet machine.\n\n' + conditions)

  for (const floor of report.floors) {
    const row = (name: string, side: SideSummary): string[] => [
      name, dec(side.cpuMicrosPerRequest, 1), dec(ratio(side.cpuMicrosPerRequest, floor.baseline.cpuMicrosPerRequest)), int(side.reqPerSec),
      int(side.non2xx)
    ]
    parts.push(`### The Fastify floor: ${floor.title}, CPU per request (interleaved, medians of the runs over ${settings.floorStarts} starts)\n\n` + table(
      ['Server', 'CPU µs/req', 'ratio to baseline', 'req/s', 'non-2xx'],
      [
        row('baseline (node:http, with the service\'s headers)', floor.baseline),
        row('baseline without the security headers and request id (reported, not a target)', floor.bareBaseline),
        row('Fastify: these routes, no logger, no other hooks (the create with the service\'s body and reply schemas, the update with the baseline\'s merge, the profile with @fastify/jwt and its guard hook)', floor.bare),
        row('the same + the service\'s security headers and request id', floor.headers),
        row('the same + a prom-client histogram observed in an onResponse hook, as the service with metrics on', floor.headersMetrics),
        row('Fastify with the headers + the service\'s logger and server options, load shedding (under-pressure), draining hook and Ajv validation of the id and the update\'s body', floor.headersFeatures),
        row('the service', floor.project),
        row('the service with metrics on', floor.projectMetrics)
      ]
    ))
  }

  const { startup } = report
  parts.push('### Start-up (spawn to first successful request, ms)\n\n' +
    'Wall time from `spawn()` to the first 200 of `GET /cats/0`; the target is on its median. Other processes on the ' +
    'machine lengthen it (see the load average above); the server\'s own CPU time until then is shown beside it.\n\n' + table(
    ['Server', 'starts', 'median', 'min', 'max', 'CPU ms (median)', 'Target', 'Result'],
    [
      ['project (npm start: node dist/server/src/server.js)', String(startup.project.samples.length), dec(startup.project.median, 0),
        dec(startup.project.min, 0), dec(startup.project.max, 0), dec(startup.project.cpuMedian, 0), `median ≤ ${startup.target}`, verdict(startup.pass)],
      ['baseline (node dist/bench/baseline-main.js)', String(startup.baseline.samples.length), dec(startup.baseline.median, 0),
        dec(startup.baseline.min, 0), dec(startup.baseline.max, 0), dec(startup.baseline.cpuMedian, 0), '—', '—']
    ]
  ))

  const { flood } = report
  if (flood !== undefined) {
    const row = (name: string, side: FloodSide, pass: boolean | undefined): string[] => [
      name, dec(side.idle.p99 / 1000), dec(side.flood.p99 / 1000), dec(side.p99Ratio),
      `${int(side.idle.requests)} / ${int(side.flood.requests)}` +
        `${side.idle.non2xx + side.flood.non2xx > 0 ? ` (non-2xx ${int(side.idle.non2xx)} / ${int(side.flood.non2xx)})` : ''}`,
      `${int(side.login.requests)} (non-2xx ${int(side.login.non2xx)}, errors ${int(side.login.errors)})`,
      `${dec(side.idle.otherLoad)} / ${dec(side.flood.otherLoad)}`,
      pass === undefined ? '—' : `≤ ${flood.target}x ${verdict(pass)}`
    ]
    parts.push(`### GET /profile latency during a login flood (${flood.connections} connections, ${flood.seconds} s)\n\n` + table(
      ['Server', 'idle p99 ms', 'flood p99 ms', 'ratio', 'probe requests (idle / flood)', 'logins answered',
        'other processes (idle / flood)', 'Target'],
      [row('project', flood.project, flood.pass), row('baseline', flood.baseline, undefined)]
    ))
  }

  const { scaling } = report
  if (scaling !== undefined) {
    const ops: ScalingOp[] = ['get', 'put', 'delete']
    const labels: Record<ScalingOp, string> = { get: 'GET /cats/:id', put: 'PUT /cats/:id', delete: 'DELETE /cats/:id + POST /cats' }
    const costs = table(
      ['Operation', ...scaling.steps.map((step) => `${int(step.size)} cats`), 'max / min', 'Target', 'Result'],
      ops.map((op) => [labels[op], ...scaling.steps.map((step) => dec(step.ops[op].cpuMicrosPerRequest, 1)),
        dec(scaling.spread[op]), `≤ ${dec(scaling.target, 1)}`, verdict(scaling.pass[op])])
    )
    const sizes = table(
      ['Size', 'prefill cats/s', 'prefill s', 'RSS MiB', 'RSS bytes per cat (all / since previous size)',
        'GET req/s', 'PUT req/s', 'DELETE+POST req/s', 'non-2xx (GET / PUT / DELETE+POST)'],
      scaling.steps.map((step) => [int(step.size), int(step.prefill.catsPerSec), dec(step.prefill.seconds, 1), mib(step.rss),
        `${int(step.rssPerCat)} / ${int(step.marginalRssPerCat)}`,
        int(step.ops.get.reqPerSec), int(step.ops.put.reqPerSec), int(step.ops.delete.reqPerSec),
        `${int(step.ops.get.non2xx)} / ${int(step.ops.put.non2xx)} / ${int(step.ops.delete.non2xx)}`])
    )
    parts.push('### Scaling (project only): CPU µs per request at each collection size, one server per size, ' +
      `measured side by side (empty servers: median RSS ${mib(scaling.emptyRss)} MiB)\n\n${costs}\n\n${sizes}`)
  }
  return parts.join('\n\n') + '\n'
}

const escapeXml = (text: string): string =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')

/** A hand-built SVG bar chart of the project / baseline ratios, one group per scenario. */
export function ratiosSvg (report: BenchReport): string {
  const rows = [...report.scenarios, ...(report.login === undefined ? [] : [report.login])]
  const labelWidth = 250
  const plotWidth = 470
  const rowHeight = 40
  const top = 84
  const width = labelWidth + plotWidth + 70
  const height = top + rows.length * rowHeight + 40
  const maxRatio = Math.max(1.6, ...rows.flatMap((s) => [s.ratios.cpuPerRequest, s.ratios.reqPerSec])) * 1.08
  const x = (value: number): number => labelWidth + value / maxRatio * plotWidth
  const out: string[] = []
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
    'font-family="Helvetica, Arial, sans-serif" font-size="12">')
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`)
  out.push(`<text x="10" y="20" font-size="15" font-weight="bold">Project / baseline (plain node:http + fast-jwt), ${escapeXml(report.mode)} run ${escapeXml(report.generatedAt.slice(0, 10))}</text>`)
  const legend: Array<[string, string]> = [
    ['#2e7d32', 'server CPU per request, target met'],
    ['#c62828', 'server CPU per request, target missed'],
    ['#9e9e9e', 'server CPU per request, no target'],
    ['#64b5f6', 'req/s (higher is better)']
  ]
  legend.forEach(([fill, label], index) => {
    const lx = 10 + (index % 2) * 300
    const ly = 34 + Math.floor(index / 2) * 16
    out.push(`<rect x="${lx}" y="${ly}" width="12" height="10" fill="${fill}"/><text x="${lx + 16}" y="${ly + 9}">${label}</text>`)
  })
  const bottom = top + rows.length * rowHeight
  const step = maxRatio <= 2 ? 0.25 : maxRatio <= 4 ? 0.5 : 1
  for (let tick = 0; tick <= maxRatio; tick += step) {
    const tx = x(tick).toFixed(1)
    out.push(`<line x1="${tx}" y1="${top}" x2="${tx}" y2="${bottom}" stroke="#eeeeee"/>`)
    out.push(`<text x="${tx}" y="${bottom + 14}" text-anchor="middle" fill="#555555">${tick.toFixed(2)}</text>`)
  }
  // The routes' target (the highest above 1 among the scenarios), drawn as a line.
  const routeTarget = Math.max(1, ...rows.map((s) => s.target ?? 0))
  const marks: Array<[number, string, number]> = [[1, '1.00 = baseline', bottom + 30], [routeTarget, `${dec(routeTarget)} target`, top - 8]]
  for (const [value, label, labelY] of marks) {
    const lx = x(value).toFixed(1)
    out.push(`<line x1="${lx}" y1="${top - 4}" x2="${lx}" y2="${bottom}" stroke="#333333" stroke-dasharray="4 3"/>`)
    out.push(`<text x="${lx}" y="${labelY}" text-anchor="start" fill="#333333">${label}</text>`)
  }
  rows.forEach((s, index) => {
    const y = top + index * rowHeight
    const colour = s.pass === undefined ? '#9e9e9e' : s.pass ? '#2e7d32' : '#c62828'
    out.push(`<text x="${labelWidth - 8}" y="${y + 16}" text-anchor="end">${escapeXml(s.title)}</text>`)
    if (s.target !== undefined) {
      out.push(`<text x="${labelWidth - 8}" y="${y + 30}" text-anchor="end" fill="#777777" font-size="10">CPU target ≤ ${s.target.toFixed(2)}</text>`)
    }
    const bar = (value: number, offset: number, barHeight: number, fill: string, text: string): void => {
      const w = Math.max(1, x(value) - labelWidth).toFixed(1)
      out.push(`<rect x="${labelWidth}" y="${y + offset}" width="${w}" height="${barHeight}" fill="${fill}"/>`)
      out.push(`<text x="${(x(value) + 4).toFixed(1)}" y="${y + offset + barHeight - 2}" font-size="11">${escapeXml(text)}</text>`)
    }
    bar(s.ratios.cpuPerRequest, 4, 16, colour, `${s.ratios.cpuPerRequest.toFixed(2)} CPU`)
    bar(s.ratios.reqPerSec, 22, 11, '#64b5f6', `${s.ratios.reqPerSec.toFixed(2)} req/s`)
  })
  out.push('</svg>')
  return out.join('\n') + '\n'
}
