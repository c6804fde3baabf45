/** The load: autocannon runs that count the server's CPU time, and the prefill of cats and logouts. */
import { performance } from 'node:perf_hooks'
import autocannon, { type Request, type Result } from 'autocannon'
import { cpuSeconds } from './servers.js'

export const JSON_HEADERS = { 'content-type': 'application/json' }

/** autocannon builds each connection's requests once and cycles through them: a long list costs nothing per request. */
export interface LoadRequest {
  method: NonNullable<Request['method']>
  path: string
  headers?: Record<string, string>
  body?: string
}

export const createCat: LoadRequest = {
  method: 'POST', path: '/cats', headers: JSON_HEADERS, body: JSON.stringify({ name: 'Tom', age: 3, breed: 'Siamese' })
}

/** 50 connections without pipelining unless set; a run of `seconds`, or of exactly `amount` requests. */
export interface RunSettings { connections?: number, pipelining?: number, seconds?: number, amount?: number }

/** `p99` in ms (autocannon's resolution); `non2xx` with errors; `cpuMicros` the server's CPU time per response. */
export interface Measurement { responses: number, reqPerSec: number, p99: number, non2xx: number, cpuMicros: number }

/** One autocannon run against a server, counting the server's CPU time over the traffic. */
export async function measure (pid: number, url: string, requests: LoadRequest[], settings: RunSettings): Promise<Measurement> {
  let cpu = cpuSeconds(pid)
  let wall = performance.now()
  const result = await new Promise<Result>((resolve, reject) => {
    const instance = autocannon({
      url,
      connections: settings.connections ?? 50,
      pipelining: settings.pipelining ?? 1,
      ...(settings.amount === undefined ? { duration: settings.seconds } : { amount: settings.amount }),
      timeout: 30,
      // Copies: autocannon keeps the built buffers on them.
      requests: requests.map((req) => ({ ...req }))
    }, (error: Error | null, result) => { if (error === null) resolve(result); else reject(error) })
    // autocannon builds every connection's requests before it sends (seconds for long lists) while the server idles.
    instance.on('start', () => {
      cpu = cpuSeconds(pid)
      wall = performance.now()
    })
  })
  const seconds = (performance.now() - wall) / 1000
  const used = cpuSeconds(pid) - cpu
  const responses = result.requests.total
  return { responses, reqPerSec: responses / seconds, p99: result.latency.p99, non2xx: result.non2xx + result.errors, cpuMicros: used / responses * 1e6 }
}

/** Adds `count` cats, or fewer once `budgetSeconds` are spent or a round created none; returns the number created. */
export async function prefill (url: string, count: number, budgetSeconds = Infinity, connections = 32): Promise<number> {
  const started = performance.now()
  let created = 0
  while (created < count && performance.now() - started < budgetSeconds * 1000) {
    const amount = Math.min(50_000, count - created)
    const result = await autocannon({ url, connections: Math.min(connections, amount), amount, timeout: 30, requests: [{ ...createCat }] })
    const more = result.statusCodeStats?.['201']?.count ?? 0
    if (more === 0) break
    created += more
  }
  return created
}
