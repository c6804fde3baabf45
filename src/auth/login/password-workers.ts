import { Worker } from 'node:worker_threads'
import type { ScryptOptions } from 'node:crypto'
import type { DeriveKey } from './password.js'

/** What a worker is asked: scrypt with these arguments. */
interface DeriveRequest {
  id: number
  password: string
  salt: Buffer
  keyLength: number
  options: ScryptOptions
}

/** What a worker answers: the key, as the bytes of a copied Buffer. */
interface DeriveReply {
  id: number
  key: Uint8Array
}

interface Job {
  resolve: (key: Buffer) => void
  reject: (error: Error) => void
}

interface Thread {
  worker: Worker
  jobs: Map<number, Job>
}

/**
 * Each worker's code. It runs below normal CPU priority (nice 10): when hashes and
 * requests want the same CPU, the event loop gets about nine tenths of it, so a
 * flood of logins slows logins, not every other request. Not the lowest priority:
 * that would starve logins whenever anything else on the host is busy. On Linux a
 * thread's nice value is its own; elsewhere it is the whole process's, so there the
 * worker keeps the normal priority. Plain JavaScript in CommonJS, so a worker starts
 * in tens of milliseconds without the module loaders the process may have been given.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads')
const { scryptSync } = require('node:crypto')
const os = require('node:os')
if (process.platform === 'linux') os.setPriority(os.constants.priority.PRIORITY_BELOW_NORMAL)
parentPort.on('message', ({ id, password, salt, keyLength, options }) => {
  parentPort.postMessage({ id, key: scryptSync(password, salt, keyLength, options) })
})
`

/**
 * Derives password keys (scrypt) on up to `size` worker threads at below-normal
 * CPU priority. A worker starts when a key is asked for and none is idle, so a
 * server that nobody logs in to starts none. A worker that stops fails the
 * derivations it still held, and the next one starts a fresh worker.
 */
export class PasswordWorkers {
  readonly #size: number
  #threads: Thread[] = []
  #nextId = 0

  constructor (size: number) {
    this.#size = size
  }

  /** How many worker threads are running. */
  get threads (): number {
    return this.#threads.length
  }

  /** scrypt on a worker; pass it to verifyPassword. */
  readonly derive: DeriveKey = (password, salt, keyLength, options) => {
    const thread = this.#pick()
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      thread.jobs.set(id, { resolve, reject })
      const request: DeriveRequest = { id, password, salt, keyLength, options }
      thread.worker.postMessage(request)
    })
  }

  /** Stops every worker; derivations still running reject. */
  async close (): Promise<void> {
    await Promise.all(this.#threads.map(({ worker }) => worker.terminate()))
  }

  /** An idle worker, else a new one while there are fewer than `size`, else the one with the fewest jobs. */
  #pick (): Thread {
    const idle = this.#threads.find(({ jobs }) => jobs.size === 0)
    if (idle !== undefined) return idle
    if (this.#threads.length < this.#size) return this.#start()
    return this.#threads.reduce((fewest, thread) => thread.jobs.size < fewest.jobs.size ? thread : fewest)
  }

  #start (): Thread {
    // No execArgv: a loader the process was started with (TypeScript in tests) would slow every start.
    const thread: Thread = { worker: new Worker(WORKER_SOURCE, { eval: true, execArgv: [] }), jobs: new Map() }
    thread.worker.on('message', ({ id, key }: DeriveReply) => {
      thread.jobs.get(id)?.resolve(Buffer.from(key.buffer, key.byteOffset, key.byteLength))
      thread.jobs.delete(id)
    })
    // An uncaught exception in the worker emits 'error' and then 'exit'. Listening to 'error' keeps it from
    // being thrown here; stopping twice is harmless.
    const stopped = (): void => {
      this.#threads = this.#threads.filter((other) => other !== thread)
      for (const job of thread.jobs.values()) job.reject(new Error('the password worker stopped'))
      thread.jobs.clear()
    }
    thread.worker.on('error', stopped)
    thread.worker.on('exit', stopped)
    this.#threads.push(thread)
    return thread
  }
}
