import { extname } from 'node:path'
import { Worker } from 'node:worker_threads'

/** What a password worker is asked. */
export interface PasswordCheck {
  id: number
  password: string
  encoded: string
}

/** What a password worker answers. */
export interface PasswordCheckResult {
  id: number
  matches: boolean
}

interface Job {
  resolve: (matches: boolean) => void
  reject: (error: Error) => void
}

interface Thread {
  worker: Worker
  jobs: Map<number, Job>
}

// Beside this module: .ts when run from source, .js when built.
const WORKER_FILE = new URL(`./password-worker${extname(import.meta.url)}`, import.meta.url)

/**
 * Checks passwords on up to `size` worker threads that run below normal CPU
 * priority (see password-worker.ts). A worker starts when a check finds none
 * idle, so a server that nobody logs in to starts none. A worker that stops
 * fails the checks it still held, and the next check starts a fresh one.
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

  /** Resolves to whether `password` matches the stored hash `encoded` (false when the hash is malformed). */
  check (password: string, encoded: string): Promise<boolean> {
    const thread = this.#pick()
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      thread.jobs.set(id, { resolve, reject })
      const request: PasswordCheck = { id, password, encoded }
      thread.worker.postMessage(request)
    })
  }

  /** Stops every worker; checks still running reject. */
  async close (): Promise<void> {
    await Promise.all(this.#threads.map(({ worker }) => worker.terminate()))
  }

  /** An idle worker, else a new one while there are fewer than `size`, else the one with the fewest checks. */
  #pick (): Thread {
    const idle = this.#threads.find(({ jobs }) => jobs.size === 0)
    if (idle !== undefined) return idle
    if (this.#threads.length < this.#size) return this.#start()
    return this.#threads.reduce((fewest, thread) => thread.jobs.size < fewest.jobs.size ? thread : fewest)
  }

  #start (): Thread {
    const thread: Thread = { worker: new Worker(WORKER_FILE), jobs: new Map() }
    thread.worker.on('message', ({ id, matches }: PasswordCheckResult) => {
      thread.jobs.get(id)?.resolve(matches)
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
