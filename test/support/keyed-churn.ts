import { spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { TEST_SECRET } from './app.js'
import { closedPort } from './ports.js'
import { baseEnv, plainNode, serverFile } from './server.js'

/** A compiled server that logs warnings only (no line per request), and its address. */
export interface QuietServer {
  child: ChildProcess
  base: string
}

/**
 * Node options for a server whose live heap can be measured: SIGURG runs a full garbage collection (the
 * heap used read otherwise includes whatever garbage the next collection would free).
 */
const COLLECT_ON_SIGURG = ['--expose-gc', "--import=data:text/javascript,process.on('SIGURG',()=>gc())"]

/**
 * Starts the compiled server as `npm start` runs it, with LOG_LEVEL=warn so that a long run of requests writes
 * no log (and holds no log buffer), `heapLimitMb` of old space and a full collection on SIGURG; it is up once
 * `/health` answers.
 */
export async function startQuietServer (heapLimitMb: number, env: Record<string, string>): Promise<QuietServer> {
  const port = await closedPort()
  const child = spawn(...plainNode(`--max-old-space-size=${heapLimitMb}`, ...COLLECT_ON_SIGURG, serverFile), {
    env: {
      ...baseEnv,
      JWT_SECRET: TEST_SECRET,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      METRICS_ENABLED: 'true',
      ...env
    },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const base = `http://127.0.0.1:${port}`
  for (let waited = 0; waited < 30_000; waited += 100) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
    if (await fetch(`${base}/health`).then((res) => res.ok, () => false)) return { child, base }
    await sleep(100)
  }
  child.kill('SIGKILL')
  throw new Error('the server did not answer within 30 s')
}

/** A compiled server's memory as its /metrics reports it, in bytes. */
export interface ServerMemory {
  rss: number
  heapUsed: number
}

export async function serverMemory (base: string): Promise<ServerMemory> {
  const text = await (await fetch(`${base}/metrics`)).text()
  const value = (name: string): number => Number(new RegExp(`^${name} ([0-9.e+]+)`, 'm').exec(text)?.[1] ?? Number.NaN)
  return { rss: value('process_resident_memory_bytes'), heapUsed: value('nodejs_heap_size_used_bytes') }
}

export interface ChurnOptions {
  /** Keyed creates, each followed by the delete of the cat it created. */
  creates: number
  /** Creates and deletes in flight at once. */
  concurrency: number
  /** Length of each cat's name. */
  nameLength: number
  /** Distinct clients, told apart by X-Forwarded-For (the server trusts one proxy hop). */
  clients: number
  /** The key of the n-th create. */
  key: (n: number) => string
}

export interface ChurnResult {
  /** How many answers of each status (0: no answer, the connection failed). */
  statuses: Record<number, number>
  /** The first failure to get an answer, when there was one. */
  failure: string | undefined
}

/** The address of client `n`, in the benchmarking range 198.18.0.0/15. */
export const churnClient = (n: number): string => `198.18.${n >> 8}.${n & 0xff}`

/**
 * Keyed create + delete over real HTTP (fetch keeps connections alive), `concurrency` at a time; stops at the first request
 * that gets no answer (the server died).
 */
export async function keyedChurn (base: string, options: ChurnOptions): Promise<ChurnResult> {
  const name = 'n'.repeat(options.nameLength)
  const statuses: Record<number, number> = {}
  let failure: string | undefined
  let next = 0
  const count = (status: number): void => { statuses[status] = (statuses[status] ?? 0) + 1 }
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < options.creates) {
      const n = next++
      const client = churnClient(n % options.clients)
      try {
        const created = await fetch(`${base}/cats`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': options.key(n), 'x-forwarded-for': client },
          body: JSON.stringify({ name, age: n % 30, breed: 'Churn' })
        })
        count(created.status)
        const cat: unknown = await created.json()
        if (created.status !== 201 || typeof cat !== 'object' || cat === null || !('id' in cat)) continue
        const deleted = await fetch(`${base}/cats/${String(cat.id)}`, { method: 'DELETE', headers: { 'x-forwarded-for': client } })
        count(deleted.status)
        await deleted.arrayBuffer()
      } catch (error) {
        count(0)
        failure ??= String(error)
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, worker))
  return { statuses, failure }
}

/** The server's memory after a full garbage collection: the heap used is then what is live. */
export async function liveMemory (server: QuietServer): Promise<ServerMemory> {
  server.child.kill('SIGURG')
  await sleep(500)
  return await serverMemory(server.base)
}
