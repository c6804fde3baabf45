/** What a queue reports to an observer (metrics); called only when a task waits or is refused. */
export interface HashQueueEvents {
  enqueued: () => void
  /** The task left the queue after waiting this many seconds (it got its slot, or gave up). */
  dequeued: (seconds: number) => void
  refused: () => void
}

/** What a queue refuses with: each gives a fresh error. */
export interface HashQueueErrors {
  /** `maxWaiting` tasks wait already. */
  whenFull: () => Error
  /** The task waited `maxWaitMs` without a free slot. */
  whenLate: () => Error
  /** The caller no longer wants the result (its signal aborted) before the task started. */
  whenAbandoned: () => Error
}

interface Waiter {
  start: () => void
  refuse: (error: Error) => void
}

/**
 * Runs async tasks with at most `concurrency` at a time and at most
 * `maxWaiting` waiting; beyond that a task is refused at once, so a flood
 * cannot pile up unbounded memory. A task waits at most `maxWaitMs`: one that
 * would start later is refused instead of served late. A task whose signal
 * aborts (its client went away) leaves the queue and never starts, so no slot
 * is spent on a result nobody will read.
 */
export class HashQueue {
  readonly #concurrency: number
  readonly #maxWaiting: number
  readonly #maxWaitMs: number
  readonly #errors: HashQueueErrors
  #running = 0
  readonly #waiting: Waiter[] = []
  readonly #events: HashQueueEvents | undefined

  constructor (concurrency: number, maxWaiting: number, maxWaitMs: number, errors: HashQueueErrors, events?: HashQueueEvents) {
    this.#concurrency = concurrency
    this.#maxWaiting = maxWaiting
    this.#maxWaitMs = maxWaitMs
    this.#errors = errors
    this.#events = events
  }

  get running (): number {
    return this.#running
  }

  get waiting (): number {
    return this.#waiting.length
  }

  async run<T> (task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted === true) throw this.#errors.whenAbandoned()
    if (this.#running < this.#concurrency) {
      this.#running++
    } else if (this.#waiting.length < this.#maxWaiting) {
      // The finishing task hands its slot over, so #running stays the same.
      await this.#wait(signal)
    } else {
      this.#events?.refused()
      throw this.#errors.whenFull()
    }
    try {
      return await task()
    } finally {
      const next = this.#waiting.shift()
      if (next === undefined) this.#running--
      else next.start()
    }
  }

  /** Resolves when a slot is handed over; rejects when the wait is too long or the signal aborts first. */
  #wait (signal: AbortSignal | undefined): Promise<void> {
    const events = this.#events
    const started = performance.now()
    events?.enqueued()
    return new Promise<void>((resolve, reject) => {
      const leave = (error: Error): void => {
        this.#waiting.splice(this.#waiting.indexOf(waiter), 1)
        waiter.refuse(error)
      }
      const onAbort = (): void => leave(this.#errors.whenAbandoned())
      const timer = setTimeout(() => leave(this.#errors.whenLate()), this.#maxWaitMs)
      const done = (): void => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        events?.dequeued((performance.now() - started) / 1000)
      }
      const waiter: Waiter = {
        start: () => { done(); resolve() },
        refuse: (error) => { done(); reject(error) }
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiting.push(waiter)
    })
  }
}
