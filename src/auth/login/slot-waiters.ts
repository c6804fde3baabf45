import type { Admission, LoginAttempt } from './login-lockout.js'

/** What a waiting login ends with: admitted, or refused for a while (never "busy": it waits instead). */
export type WaitOutcome = Exclude<Admission, { reason: 'busy' }>

export interface SlotWaitersOptions {
  /** Attempts in line at once, over all keys; past it one that would wait behind another of its key is refused at once. */
  maxWaiting: number
  /** How long an attempt waits in line for a slot before it is refused. */
  waitMs: number
  /** How often a key with waiters asks again while nothing here frees a slot. */
  pollMs: number
  /** The error an attempt is refused with when the lines are full or it waited `waitMs`. */
  refused: () => Error
}

interface Waiter {
  attempt: LoginAttempt
  answer: (answer: WaitOutcome) => void
  fail: (error: unknown) => void
  /** Its time ran out while it was asking: it leaves at the next busy answer. */
  late: boolean
  timer: NodeJS.Timeout
}

/** The logins of one key (one username from one address) waiting for a slot, first come first asked. */
interface KeyQueue {
  waiters: Waiter[]
  /** The first waiter's ask is in flight (it has left `waiters` meanwhile). */
  asking: Waiter | undefined
  /** A slot was freed here while the ask was in flight: the answer may be stale, so ask again at once. */
  woken: boolean
  poll: NodeJS.Timeout | undefined
}

/**
 * The attempts of one key (one username from one address) ask the store for
 * a slot one at a time, in the order they came, so a key has one ask in
 * flight at most however many attempts it has. An attempt told that every
 * slot is held stays first in line and asks again when an attempt of that
 * key ends here (`freed`) or, for slots freed elsewhere (another instance, an
 * expired lease), every `pollMs`. An attempt with nobody of its key ahead
 * asks at once; one that would have to wait behind others is refused at once
 * when `maxWaiting` attempts are in line already.
 */
export class SlotWaiters {
  readonly #ask: (attempt: LoginAttempt) => Promise<Admission>
  readonly #options: SlotWaitersOptions
  readonly #lines = new Map<string, KeyQueue>()
  #waiting = 0

  /** `ask`: the store's admission of one attempt; its errors reach every waiter of the key. */
  constructor (ask: (attempt: LoginAttempt) => Promise<Admission>, options: SlotWaitersOptions) {
    this.#ask = ask
    this.#options = options
  }

  /** Attempts in line now (asking or waiting), for tests. */
  get waiting (): number {
    return this.#waiting
  }

  /** Admits the attempt or refuses it, waiting for a slot as long as they are all held. */
  async admit (key: string, attempt: LoginAttempt): Promise<WaitOutcome> {
    let line = this.#lines.get(key)
    const first = line === undefined
    if (line === undefined) {
      line = { waiters: [], asking: undefined, woken: false, poll: undefined }
      this.#lines.set(key, line)
    } else if (this.#waiting >= this.#options.maxWaiting) {
      throw this.#options.refused()
    }
    const joined = line
    this.#waiting++
    const answer = new Promise<WaitOutcome>((resolve, reject) => {
      const leave = (): void => {
        clearTimeout(waiter.timer)
        this.#waiting--
      }
      const waiter: Waiter = {
        attempt,
        answer: (answer) => { leave(); resolve(answer) },
        fail: (error) => { leave(); reject(error) },
        late: false,
        timer: setTimeout(() => {
          // An ask in flight is not abandoned: its answer decides, and a busy one ends the wait.
          if (joined.asking === waiter) {
            waiter.late = true
            return
          }
          joined.waiters.splice(joined.waiters.indexOf(waiter), 1)
          this.#forgetIfIdle(key, joined)
          waiter.fail(this.#options.refused())
        }, this.#options.waitMs)
      }
      joined.waiters.push(waiter)
    })
    if (first) this.#next(key, joined)
    return await answer
  }

  /** An attempt of this key ended here and freed its slot: the first waiter asks now. */
  freed (key: string): void {
    const line = this.#lines.get(key)
    if (line === undefined) return
    if (line.asking !== undefined) line.woken = true
    else this.#next(key, line)
  }

  /** The first waiter asks; an admission or a refusal is its answer and the next one asks at once. */
  #next (key: string, line: KeyQueue): void {
    clearTimeout(line.poll)
    line.poll = undefined
    const waiter = line.waiters.shift()
    if (waiter === undefined) {
      this.#lines.delete(key)
      return
    }
    line.asking = waiter
    line.woken = false
    this.#ask(waiter.attempt).then((admission) => {
      line.asking = undefined
      if (admission.admitted || admission.reason !== 'busy') {
        waiter.answer(admission)
        this.#next(key, line)
        return
      }
      if (waiter.late) waiter.fail(this.#options.refused())
      else line.waiters.unshift(waiter)
      if (line.woken) this.#next(key, line)
      else if (!this.#forgetIfIdle(key, line)) this.#schedule(key, line)
    }, (error: unknown) => {
      // The store failed: every waiter of the key gets the answer now rather than each its own failure in turn.
      line.asking = undefined
      this.#lines.delete(key)
      waiter.fail(error)
      for (const other of line.waiters.splice(0)) other.fail(error)
    })
  }

  #schedule (key: string, line: KeyQueue): void {
    line.poll = setTimeout(() => this.#next(key, line), this.#options.pollMs)
  }

  /** Drops the line once nobody waits in it; true when it did. */
  #forgetIfIdle (key: string, line: KeyQueue): boolean {
    if (line.waiters.length > 0 || line.asking !== undefined) return false
    clearTimeout(line.poll)
    this.#lines.delete(key)
    return true
  }
}
