import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { Admission, LoginAttempt } from '../../src/auth/login/login-lockout.js'
import { SlotWaiters, type WaitOutcome, type SlotWaitersOptions } from '../../src/auth/login/slot-waiters.js'

// Attempts of one key ask the store one at a time and wait in this process for a slot: woken when one of theirs
// ends here, asking again every pollMs for slots freed elsewhere, bounded in number and in time.

const attempt = (id: string): LoginAttempt => ({ username: 'ann', client: '10.0.0.1', id })

/** A store of `slots` slots that counts its asks; `release` frees a slot as another instance would. */
class Slots {
  asks = 0
  held = 0
  slots: number
  /** When set, the answer to every ask, instead of the slots'. */
  answer: (() => Promise<Admission>) | undefined

  constructor (slots: number) {
    this.slots = slots
  }

  // Answered within the same turn of the event loop, so a test sees every ask a step causes once it yields.
  readonly ask = async (): Promise<Admission> => {
    this.asks++
    if (this.answer !== undefined) return await this.answer()
    if (this.held >= this.slots) return { admitted: false, reason: 'busy' }
    this.held++
    return { admitted: true }
  }

  release (): void {
    this.held--
  }
}

/** Resolves once `condition` holds, checking every millisecond. */
async function until (condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(1)
}

const refused = (): Error => Object.assign(new Error('too many in progress'), { code: 'REFUSED' })
const options = (overrides: Partial<SlotWaitersOptions> = {}): SlotWaitersOptions => ({ maxWaiting: 100, waitMs: 2000, pollMs: 10_000, refused, ...overrides })

t.test('an attempt with nobody of its key ahead asks at once; the line is gone once it is answered', async (t) => {
  const store = new Slots(1)
  const waiters = new SlotWaiters(store.ask, options())
  t.strictSame(await waiters.admit('k', attempt('a')), { admitted: true })
  t.equal(store.asks, 1)
  t.equal(waiters.waiting, 0)
  waiters.freed('k')
  t.equal(store.asks, 1, 'a freed slot with nobody waiting asks nothing')
})

t.test('attempts fired at once ask one at a time: one ask per admission, then one busy ask until a slot is freed here', async (t) => {
  const store = new Slots(2)
  const waiters = new SlotWaiters(store.ask, options())
  const answers = Array.from({ length: 50 }, (_, n) => waiters.admit('k', attempt(String(n))))
  await until(() => store.asks === 3)
  await sleep(20)
  t.equal(store.asks, 3, 'two admissions and one busy answer, then nothing while the slots stay held')
  t.equal(waiters.waiting, 48, 'two admitted, the others wait')
  for (let left = 47; left >= 0; left--) {
    store.release()
    waiters.freed('k')
    await sleep(0)
    t.equal(waiters.waiting, left)
  }
  t.ok((await Promise.all(answers)).every((answer) => answer.admitted), 'every attempt was admitted in turn')
  t.equal(store.asks, 3 + 2 * 48 - 1, 'each freed slot: one ask that takes it, and one that finds the next busy (none after the last)')
})

t.test('a slot freed while an ask is in flight makes the first waiter ask again at once', async (t) => {
  const store = new Slots(1)
  const waiters = new SlotWaiters(store.ask, options())
  await waiters.admit('k', attempt('holder'))
  let answerBusy: () => void = () => {}
  store.answer = async () => await new Promise<Admission>((resolve) => { answerBusy = () => resolve({ admitted: false, reason: 'busy' }) })
  const waiting = waiters.admit('k', attempt('waiter'))
  await until(() => store.asks === 2)
  store.answer = undefined
  store.release()
  waiters.freed('k')
  answerBusy()
  t.strictSame(await waiting, { admitted: true })
  t.equal(store.asks, 3, 'asked again at once, not at the next poll')
})

t.test('slots freed elsewhere are found by one poll per key, whatever the number of waiters', async (t) => {
  const store = new Slots(1)
  const waiters = new SlotWaiters(store.ask, options({ pollMs: 50 }))
  await waiters.admit('k', attempt('holder'))
  const answers = Array.from({ length: 20 }, (_, n) => waiters.admit('k', attempt(String(n))))
  await sleep(300)
  t.ok(store.asks <= 2 + 300 / 50, `${store.asks} asks in 300 ms of 20 waiters`)
  store.release()
  t.strictSame(await answers[0], { admitted: true }, 'the first waiter got the slot freed elsewhere')
  store.slots = 100
  t.equal((await Promise.all(answers)).length, 20)
})

t.test('a refusal (a lock) is its attempt\'s answer, and the next one asks at once', async (t) => {
  const store = new Slots(1)
  const waiters = new SlotWaiters(store.ask, options())
  await waiters.admit('k', attempt('holder'))
  const answers = [waiters.admit('k', attempt('a')), waiters.admit('k', attempt('b'))]
  await sleep(20)
  const locked: WaitOutcome = { admitted: false, reason: 'locked', retryAfterMs: 60_000 }
  store.answer = async () => locked
  waiters.freed('k')
  t.strictSame(await Promise.all(answers), [locked, locked])
})

t.test('an attempt that waits past waitMs is refused, and its line is forgotten when nobody is left', async (t) => {
  const store = new Slots(1)
  const waiters = new SlotWaiters(store.ask, options({ waitMs: 100 }))
  await waiters.admit('k', attempt('holder'))
  const started = Date.now()
  await Promise.all(['a', 'b'].map(async (id) => await t.rejects(waiters.admit('k', attempt(id)), { code: 'REFUSED' })))
  t.ok(Date.now() - started >= 90, 'after its wait')
  t.equal(waiters.waiting, 0)
  store.release()
  t.strictSame(await waiters.admit('k', attempt('c')), { admitted: true }, 'a new attempt asks at once')
})

t.test('an attempt whose time runs out while it asks: a busy answer ends its wait, an admission admits it', async (t) => {
  const store = new Slots(0)
  let answer: (admission: Admission) => void = () => {}
  store.answer = async () => await new Promise<Admission>((resolve) => { answer = resolve })
  const waiters = new SlotWaiters(store.ask, options({ waitMs: 50 }))
  const busy = t.rejects(waiters.admit('k', attempt('a')), { code: 'REFUSED' }, 'late and busy')
  const behind = t.rejects(waiters.admit('k', attempt('b')), { code: 'REFUSED' }, 'late in line')
  await sleep(100)
  answer({ admitted: false, reason: 'busy' })
  await Promise.all([busy, behind])

  const admitted = waiters.admit('k', attempt('c'))
  await sleep(100)
  answer({ admitted: true })
  t.strictSame(await admitted, { admitted: true }, 'late but admitted')
  t.equal(waiters.waiting, 0)
})

t.test('past maxWaiting, an attempt that would wait behind others is refused at once; one of another key still asks', async (t) => {
  const store = new Slots(1)
  const waiters = new SlotWaiters(store.ask, options({ maxWaiting: 5 }))
  await waiters.admit('k', attempt('holder'))
  const started = Date.now()
  const answers = Array.from({ length: 20 }, (_, n) => waiters.admit('k', attempt(String(n))).then(() => 'admitted', () => Date.now() - started))
  store.slots = 100
  waiters.freed('k')
  t.strictSame(await waiters.admit('other', attempt('x')), { admitted: true }, 'another key is not held back')
  const results = await Promise.all(answers)
  t.equal(results.filter((result) => result === 'admitted').length, 5, 'five in line, admitted in turn')
  t.equal(results.filter((result) => typeof result === 'number' && result < 100).length, 15, 'fifteen refused at once')
})

t.test('a store failure answers every waiter of the key at once', async (t) => {
  const store = new Slots(1)
  const waiters = new SlotWaiters(store.ask, options())
  await waiters.admit('k', attempt('holder'))
  const answers = Array.from({ length: 5 }, async (_, n) => await t.rejects(waiters.admit('k', attempt(String(n))), { message: 'store unreachable' }))
  await sleep(20)
  store.answer = async () => { throw new Error('store unreachable') }
  waiters.freed('k')
  await Promise.all(answers)
  t.equal(store.asks, 3, 'one ask failed for all of them')
  t.equal(waiters.waiting, 0)
  store.answer = undefined
  store.release()
  t.strictSame(await waiters.admit('k', attempt('next')), { admitted: true })
})
