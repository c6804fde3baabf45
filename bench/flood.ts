/** The login flood group (`flood`): GET /profile's p99 idle and during a login flood; BENCHMARKS.md gives its method and target. */
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { table, verdict, type Bench } from './harness.js'
import { measure } from './load.js'
import { loginRequest, profileRequest, signToken } from './scenarios.js'

const TARGET = 3

/** Two keep-alive clients, each sending one request at a time with a 1 ms pause, for `seconds`: p99 ms, non-2xx. */
async function probe (url: string, headers: Record<string, string> | undefined, seconds: number): Promise<{ p99: number, non2xx: number }> {
  const latencies: number[] = []
  let non2xx = 0
  const deadline = performance.now() + seconds * 1000
  const client = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const started = performance.now()
      const res = await fetch(url, { headers })
      await res.arrayBuffer()
      latencies.push(performance.now() - started)
      if (!res.ok) non2xx++
      await sleep(1)
    }
  }
  await Promise.all([client(), client()])
  latencies.sort((a, b) => a - b)
  return { p99: latencies[Math.ceil(latencies.length * 0.99) - 1], non2xx }
}

export async function runFlood (bench: Bench): Promise<string> {
  const seconds = bench.mode.floodSeconds
  const rows: string[][] = []
  for (const kind of ['service', 'baseline'] as const) {
    const server = await bench.start(kind)
    try {
      const { path, headers } = profileRequest(signToken(bench.secret))
      await probe(server.url + path, headers, 0.5)
      const idle = await probe(server.url + path, headers, seconds)
      const flooding = measure(server.pid, server.url, [loginRequest], { connections: 50, seconds: seconds + 1 })
      await sleep(500)
      const flood = await probe(server.url + path, headers, seconds)
      const logins = await flooding
      const ratio = flood.p99 / idle.p99
      bench.log(`[flood] ${kind}: idle p99 ${idle.p99.toFixed(2)} ms, flood p99 ${flood.p99.toFixed(2)} ms (×${ratio.toFixed(2)})`)
      rows.push([kind, idle.p99.toFixed(2), flood.p99.toFixed(2), ratio.toFixed(2), String(idle.non2xx + flood.non2xx),
        `${logins.reqPerSec.toFixed(1)} (non-2xx ${logins.non2xx})`, kind === 'service' ? `≤ ${TARGET} ${verdict(ratio <= TARGET)}` : '—'])
    } finally {
      await server.stop()
    }
  }
  return `### GET /profile p99 during a login flood (50 connections, ${seconds} s)\n\n` +
    table(['Server', 'idle p99 ms', 'flood p99 ms', 'ratio', 'probe non-2xx', 'logins/s', 'Target'], rows)
}
