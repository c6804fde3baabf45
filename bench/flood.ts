/**
 * Login flood: GET /profile latency (our own microsecond probe) on an idle
 * server, then while autocannon floods POST /auth/login. Target: the
 * project's flood p99 at most 3 × its idle p99; the baseline for reference.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Harness } from './harness.js'
import { measure, probe } from './load.js'
import type { FloodResult, FloodSide } from './report.js'
import { loginRequest, profileRequest, signToken } from './scenarios.js'
import type { ServerKind } from './servers.js'

const TARGET = 3

async function floodSide (bench: Harness, kind: ServerKind, secret: string): Promise<FloodSide> {
  const { mode } = bench
  const server = await bench.start(kind)
  try {
    // Signed now: a token lives an hour, and the flood runs late in a full run.
    const req = profileRequest(signToken(secret))
    await probe(server.pid, server.url, req, 0.5)
    const idle = await bench.quietest(() => probe(server.pid, server.url, req, mode.floodSeconds))
    const flooding = measure(server.pid, server.url, { requests: [loginRequest] },
      { connections: mode.floodConnections, duration: mode.floodSeconds + 1, timeout: 60 })
    await sleep(500)
    const flood = await probe(server.pid, server.url, req, mode.floodSeconds)
    const logins = await flooding
    const side: FloodSide = {
      idle,
      flood,
      p99Ratio: idle.p99 === 0 ? 0 : flood.p99 / idle.p99,
      login: { requests: logins.requests, non2xx: logins.non2xx, errors: logins.errors, timeouts: logins.timeouts, statusCodes: logins.statusCodes }
    }
    bench.log(`[flood] ${kind}: idle p99 ${(idle.p99 / 1000).toFixed(2)} ms, flood p99 ${(flood.p99 / 1000).toFixed(2)} ms ` +
      `(x${side.p99Ratio.toFixed(2)}), probe non-2xx ${idle.non2xx} / ${flood.non2xx}, logins answered ${logins.requests}, ` +
      `non-2xx ${logins.non2xx}`)
    return side
  } finally {
    await server.stop()
  }
}

/** `secret` is the JWT secret of the project and the baseline. */
export async function runFlood (bench: Harness, secret: string): Promise<FloodResult> {
  const project = await floodSide(bench, 'project', secret)
  const baseline = await floodSide(bench, 'baseline', secret)
  return {
    connections: bench.mode.floodConnections,
    seconds: bench.mode.floodSeconds,
    project,
    baseline,
    target: TARGET,
    pass: project.p99Ratio <= TARGET
  }
}
