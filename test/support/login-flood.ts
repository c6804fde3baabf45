import { execFile } from 'node:child_process'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { plainNode } from './server.js'

/** One login's answer as the flooding client saw it: status, time since it was sent, the error's code and Retry-After. */
export interface FloodAnswer { status: number, ms: number, code?: string, retryAfter?: string }

// Run in a child process, so the client's work does not share the server's event loop.
const FLOOD_SCRIPT = `
import { request } from 'node:http'

const [port, count, body] = [Number(process.argv[1]), Number(process.argv[2]), process.argv[3]]
const one = () => new Promise((resolve) => {
  const started = performance.now()
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/auth/login', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
    let text = ''
    res.setEncoding('utf8')
    res.on('data', (chunk) => { text += chunk })
    res.on('end', () => resolve({
      status: res.statusCode, ms: performance.now() - started, retryAfter: res.headers['retry-after'], code: res.statusCode === 200 ? undefined : JSON.parse(text).code
    }))
  })
  req.on('error', (error) => resolve({ status: 0, ms: performance.now() - started, code: String(error) }))
  req.end(body)
})
console.log(JSON.stringify(await Promise.all(Array.from({ length: count }, one))))
`

/** What the flooding client saw, and how long the server took for each 503 (the client's times add its queueing). */
export interface Flood {
  answers: FloodAnswer[]
  refusedServerMs: number[]
}

/**
 * Makes the app listen and sends it `count` logins with this body at once over HTTP, each on its own connection,
 * from a child process.
 */
export async function floodLogins (app: FastifyInstance, count: number, body: string): Promise<Flood> {
  const refusedServerMs: number[] = []
  app.server.on('request', (_request: IncomingMessage, response: ServerResponse) => {
    const arrived = performance.now()
    response.once('finish', () => { if (response.statusCode === 503) refusedServerMs.push(performance.now() - arrived) })
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const { stdout } = await promisify(execFile)(...plainNode('--input-type=module', '-e', FLOOD_SCRIPT, String(port), String(count), body), { maxBuffer: 10 * 1024 * 1024 })
  return { answers: JSON.parse(stdout) as FloodAnswer[], refusedServerMs }
}

/**
 * Counts the commands clients send to Redis whose arguments include `marker` (such as a test's own key prefix), with
 * MONITOR on a connection of its own; other tests' commands on the same Redis are not counted.
 */
export async function countCommands (redisUrl: string, marker: string): Promise<{ total: () => number, byName: Map<string, number>, stop: () => void }> {
  // monitor() opens a connection of its own from this client's options: this one never connects.
  const redis = new Redis(redisUrl, { lazyConnect: true })
  const monitor = await redis.monitor()
  const byName = new Map<string, number>()
  let total = 0
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    // Commands a script runs are shown too, with the source "lua": only what clients send counts.
    if (source === 'lua' || !args.some((arg) => arg.includes(marker))) return
    total++
    const name = String(args[0]).toLowerCase()
    byName.set(name, (byName.get(name) ?? 0) + 1)
  })
  return {
    total: () => total,
    byName,
    stop: () => {
      monitor.disconnect()
      redis.disconnect()
    }
  }
}
