/** What a queue reports to an observer (metrics); called only when a task waits or is refused. */
export interface HashQueueEvents {
  enqueued: () => void
  /** The task got its slot after waiting this many seconds. */
  dequeued: (seconds: number) => void
  refused: () => void
}

/**
 * Runs async tasks with at most `concurrency` at a time and at most
 * `maxWaiting` waiting; beyond that a task is refused at once with the
 * error from `whenFull`, so a flood cannot pile up unbounded memory.
 */
export class HashQueue {
  readonly #concurrency: number
  readonly #maxWaiting: number
  #running = 0
  readonly #waiting: Array<() => void> = []
  readonly #whenFull: () => Error
  readonly #events: HashQueueEvents | undefined

  constructor (concurrency: number, maxWaiting: number, whenFull: () => Error, events?: HashQueueEvents) {
    this.#concurrency = concurrency
    this.#maxWaiting = maxWaiting
    this.#whenFull = whenFull
    this.#events = events
  }

  get running (): number {
    return this.#running
  }

  get waiting (): number {
    return this.#waiting.length
  }

  async run<T> (task: () => Promise<T>): Promise<T> {
    if (this.#running < this.#concurrency) {
      this.#running++
    } else if (this.#waiting.length < this.#maxWaiting) {
      // The finishing task hands its slot over, so #running stays the same.
      await this.#wait()
    } else {
      this.#events?.refused()
      throw this.#whenFull()
    }
    try {
      return await task()
    } finally {
      const next = this.#waiting.shift()
      if (next === undefined) this.#running--
      else next()
    }
  }

  async #wait (): Promise<void> {
    const events = this.#events
    if (events === undefined) return new Promise<void>((resolve) => this.#waiting.push(resolve))
    const start = performance.now()
    events.enqueued()
    await new Promise<void>((resolve) => this.#waiting.push(resolve))
    events.dequeued((performance.now() - start) / 1000)
  }
}
