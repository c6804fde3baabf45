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

  constructor (concurrency: number, maxWaiting: number, whenFull: () => Error) {
    this.#concurrency = concurrency
    this.#maxWaiting = maxWaiting
    this.#whenFull = whenFull
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
      await new Promise<void>((resolve) => this.#waiting.push(resolve))
    } else {
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
}
