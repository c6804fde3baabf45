import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import Fastify from 'fastify'
import { MemoryLoginAttempts, type LoginAttempt, type LoginPolicy, type Outcome } from '../../src/auth/login/login-lockout.js'
import { LoginProtection } from '../../src/auth/login/login-protection.js'
import { DependencyStatus } from '../../src/dependency-status.js'

// How the protection drives its store around a password check: it waits for a
// slot, counts the outcome, and fails closed when a failure cannot be counted.

const POLICY: LoginPolicy = { maxFailures: 2, windowMs: 60_000, lockMs: 60_000, lockMaxMs: 60_000, clientMaxFailures: 100, clientWindowMs: 60_000 }

/** The memory counters, with settling made to fail on demand, as a store that went away mid-login would. */
class FlakyStore extends MemoryLoginAttempts {
  failSettle = false
  readonly settled: Outcome[] = []

  override async settle (attempt: LoginAttempt, outcome: Outcome): Promise<void> {
    this.settled.push(outcome)
    await super.settle(attempt, outcome)
    if (this.failSettle) throw new Error('store unreachable')
  }
}

const user = { id: 1, username: 'ann' }
const found = async (): Promise<typeof user> => user
const notFound = async (): Promise<undefined> => undefined

/** Password checks that end only when released, in the order they started. */
function heldChecks (): { verify: () => Promise<typeof user>, release: () => void } {
  const waiting: Array<() => void> = []
  return {
    verify: async () => { await new Promise<void>((resolve) => { waiting.push(resolve) }); return user },
    release: () => { waiting.shift()?.() }
  }
}

t.test('an attempt waits for a slot while others are checked, and gets it when one ends', async (t) => {
  const store = new FlakyStore(POLICY)
  const protection = new LoginProtection(store)
  const held = heldChecks()
  const first = [1, 2].map(() => protection.check('ann', '10.0.0.1', held.verify))
  const waiting = protection.check('ann', '10.0.0.1', found)
  await sleep(100)
  t.strictSame(store.settled, [], 'two were admitted; the third is still waiting')
  held.release()
  t.strictSame(await waiting, user, 'it got the slot the first one freed')
  held.release()
  t.strictSame(await Promise.all(first), [user, user])
})

t.test('an attempt that waits longer than its bound for a slot gets 503 and counts nothing', async (t) => {
  const store = new FlakyStore(POLICY)
  const protection = new LoginProtection(store, { slotWaitMs: 100 })
  const held = heldChecks()
  const first = [1, 2].map(() => protection.check('ann', '10.0.0.1', held.verify))
  const started = Date.now()
  await t.rejects(protection.check('ann', '10.0.0.1', found), { code: 'AUTH_ERR_LOGINS_IN_PROGRESS', statusCode: 503 })
  t.ok(Date.now() - started >= 100, 'it waited for its bound first')
  held.release()
  held.release()
  await Promise.all(first)
  t.strictSame(store.settled, ['succeeded', 'succeeded'])
})

t.test('a failure that cannot be counted fails the login closed (503); a success or an unchecked attempt goes on', async (t) => {
  const store = new FlakyStore(POLICY)
  const lines: string[] = []
  const log = Fastify({ logger: { level: 'info', stream: { write: (line: string) => { lines.push(line) } } } }).log
  const status = new DependencyStatus('redis', log, async () => {})
  const protection = new LoginProtection(store, { status })
  store.failSettle = true
  await t.rejects(protection.check('ann', '10.0.0.1', notFound), { code: 'AUTH_ERR_LIMITER_UNAVAILABLE', statusCode: 503 })
  t.match(lines, [/redis unavailable/], 'the store is reported unavailable')
  t.strictSame(await protection.check('ann', '10.0.0.1', found), user, 'the user proved who they are')
  await t.rejects(protection.check('ann', '10.0.0.1', async () => { throw new Error('queue full') }), { message: 'queue full' },
    'the check\'s own error, not the store\'s')
  t.strictSame(store.settled, ['failed', 'succeeded', 'unchecked'])
})
