import { Agent, request } from 'node:http'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { cpuSeconds, machineBusySeconds, ownCpuSeconds } from './proc.js'

export const JSON_HEADERS = { 'content-type': 'application/json' }

export interface LoadRequest {
  method: string
  path: string
  headers?: Record<string, string>
  body?: string
}

/**
 * What one scenario sends: each connection cycles through these requests in
 * order. autocannon builds them once, so a long list (e.g. one request per id)
 * costs the load generator nothing per request, unlike a per-request callback.
 */
export interface Workload {
  requests: LoadRequest[]
}

export interface LoadSettings {
  connections: number
  pipelining?: number
  /** Seconds; use either duration or amount. */
  duration?: number
  amount?: number
  /** Seconds before a request counts as timed out. */
  timeout?: number
}

export interface Measurement {
  requests: number
  seconds: number
  reqPerSec: number
  /** Milliseconds (autocannon's resolution is 1 ms). */
  latencyP50: number
  latencyP99: number
  latencyAvg: number
  non2xx: number
  errors: number
  timeouts: number
  statusCodes: Record<string, number>
  bytesPerSec: number
  /** The server's own CPU time (utime + stime of all its threads) during the run. */
  cpuSeconds: number
  cpuMicrosPerRequest: number
  /** Server CPU seconds per wall second: near 1 when the server was the bottleneck. */
  serverBusy: number
  /**
   * CPU seconds per wall second that other processes used meanwhile (all CPUs
   * busy, less the server and the load generator): 0 on a quiet machine.
   */
  otherLoad: number
}

interface RunMeter {
  seconds: number
  /** The server's CPU seconds. */
  serverCpu: number
  /** CPU (cores: CPU seconds per wall second) that processes other than the server and this one used. */
  otherLoad: number
}

/** Starts counting a run; the returned function gives what was counted since. */
function runMeter (pid: number): () => RunMeter {
  const machine = machineBusySeconds()
  const server = cpuSeconds(pid)
  const own = ownCpuSeconds()
  const wall = performance.now()
  return () => {
    const seconds = (performance.now() - wall) / 1000
    const serverCpu = cpuSeconds(pid) - server
    const used = machineBusySeconds() - machine - serverCpu - (ownCpuSeconds() - own)
    return { seconds, serverCpu, otherLoad: Math.max(0, used / seconds) }
  }
}

/** Drives one server with autocannon and counts the server's CPU time over the traffic. */
export async function measure (pid: number, url: string, workload: Workload, settings: LoadSettings): Promise<Measurement> {
  let meter = runMeter(pid)
  const instance = autocannon({
    url,
    connections: settings.connections,
    pipelining: settings.pipelining ?? 1,
    ...(settings.amount === undefined ? { duration: settings.duration ?? 5 } : { amount: settings.amount }),
    timeout: settings.timeout ?? 10,
    sampleInt: 100,
    // Copies: autocannon stores the built request buffers on these objects.
    requests: workload.requests.map((req) => ({ ...req }))
  })
  // autocannon's own duration includes building the requests of every connection (seconds for 50 connections ×
  // thousands of requests), while the server idles: time the traffic, and count the server's CPU, from 'start'.
  // Counted from before the build, a server's idle work (the service's load-shedding timers: 20-40 ms in 6.5 s)
  // would be charged to the requests of the run.
  instance.on('start', () => { meter = runMeter(pid) })
  const result = await instance
  const { seconds, serverCpu: cpu, otherLoad } = meter()
  const requests = result.requests.total
  const statusCodes: Record<string, number> = {}
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count
  return {
    requests,
    seconds,
    reqPerSec: requests / seconds,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    latencyAvg: result.latency.average,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    bytesPerSec: result.throughput.total / seconds,
    cpuSeconds: cpu,
    cpuMicrosPerRequest: requests > 0 ? cpu / requests * 1e6 : 0,
    serverBusy: cpu / seconds,
    otherLoad
  }
}

export interface PrefillResult {
  cats: number
  seconds: number
  catsPerSec: number
  non201: number
}

const CAT_BODY = JSON.stringify({ name: 'Tom', age: 3, breed: 'Siamese' })

export const createCat: LoadRequest = { method: 'POST', path: '/cats', headers: JSON_HEADERS, body: CAT_BODY }

/**
 * Adds exactly `count` cats with concurrent keep-alive POST /cats. autocannon
 * without pipelining is exact with `amount`: a connection sends its next
 * request only after the previous response (with pipelining, requests still in
 * flight when it reaches `amount` are dropped uncounted, yet may be served).
 * It works in chunks and stops early, with fewer cats, once `budgetSeconds` are spent.
 */
export async function prefill (url: string, count: number, budgetSeconds = Infinity, connections = 32): Promise<PrefillResult> {
  const started = performance.now()
  const elapsed = (): number => (performance.now() - started) / 1000
  let created = 0
  let sent = 0
  while (sent < count && elapsed() < budgetSeconds) {
    const amount = Math.min(50_000, count - sent)
    const result = await autocannon({
      url,
      connections: Math.min(connections, amount),
      amount,
      sampleInt: 100,
      timeout: 30,
      requests: [{ ...createCat }]
    })
    sent += amount
    created += result.statusCodeStats['201']?.count ?? 0
  }
  const seconds = elapsed()
  return { cats: created, seconds, catsPerSec: seconds > 0 ? created / seconds : 0, non201: sent - created }
}

/**
 * Logs out each token once (POST /auth/logout, one connection, so that every
 * token is sent exactly once); the number answered 204.
 */
export async function logOut (url: string, tokens: string[]): Promise<number> {
  const result = await autocannon({
    url,
    connections: 1,
    amount: tokens.length,
    sampleInt: 100,
    timeout: 30,
    requests: tokens.map((token) => ({ method: 'POST', path: '/auth/logout', headers: { authorization: `Bearer ${token}` } }))
  })
  return result.statusCodeStats['204']?.count ?? 0
}

/** One keep-alive request; resolves to the status once the whole response is read. */
function send (agent: Agent, url: string, req: LoadRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url + req.path, { method: req.method, headers: req.headers, agent }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    outgoing.on('error', reject)
    outgoing.end(req.body)
  })
}

export interface ProbeResult {
  requests: number
  non2xx: number
  /** Microseconds. */
  p50: number
  p99: number
  max: number
  /** CPU (cores) other processes used meanwhile, as in Measurement. */
  otherLoad: number
}

function percentile (sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)]
}

/**
 * A light latency probe with microsecond resolution: `concurrency` keep-alive
 * clients, each sending one request, reading the whole response, pausing
 * `pauseMs`, and again, for `seconds`.
 */
export async function probe (pid: number, url: string, req: LoadRequest, seconds: number, concurrency = 2, pauseMs = 1): Promise<ProbeResult> {
  const meter = runMeter(pid)
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const latencies: number[] = []
  let non2xx = 0
  const deadline = performance.now() + seconds * 1000
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const started = performance.now()
      const status = await send(agent, url, req)
      latencies.push((performance.now() - started) * 1000)
      if (status < 200 || status > 299) non2xx++
      await sleep(pauseMs)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, loop))
  agent.destroy()
  latencies.sort((a, b) => a - b)
  return {
    requests: latencies.length,
    non2xx,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? 0,
    otherLoad: meter().otherLoad
  }
}
