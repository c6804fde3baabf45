import { randomUUID } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import type { SessionRecord, SessionStore } from '../../src/auth/sessions/session-store.js'

/**
 * Races on one session store, without HTTP: presenters of one refresh token
 * generation at once, and long chains of rotations. Each function answers what
 * went wrong, per trial (empty when nothing did), so a test can run a few
 * trials and a stress run hundreds.
 */

/** A new session as login records it. */
export const sessionRecord = (overrides: Partial<SessionRecord> = {}): SessionRecord => {
  const now = Date.now()
  return {
    id: randomUUID(),
    userId: 1,
    username: 'john',
    generation: 0,
    rotatedMs: 0,
    createdMs: now,
    lastUsedMs: now,
    address: '127.0.0.1',
    userAgent: 'curl/8',
    expiresMs: now + 60_000,
    windowStartMs: 0,
    windowCount: 0,
    ended: false,
    ...overrides
  }
}

/** No refresh limit, no reuse window. */
export const NO_LIMIT = { max: 1_000_000, windowMs: 60_000, reuseWindowMs: 0 }
/** Ten seconds, REFRESH_REUSE_WINDOW's default. */
export const REUSE_WINDOW = { ...NO_LIMIT, reuseWindowMs: 10_000 }
/** Sessions per user, far above what these tests start. */
export const CAP = 100
const PRESENTERS = 8

/** Without the reuse window: of presenters of generation 0 at once, exactly one rotates, and the session has then ended. */
export async function simultaneousPresenters (store: SessionStore, trials: number): Promise<string[]> {
  const wrong: string[] = []
  for (let trial = 0; trial < trials; trial++) {
    const mine = sessionRecord()
    await store.start(mine, CAP)
    const outcomes = await Promise.all(Array.from({ length: PRESENTERS }, () => {
      const now = Date.now()
      return store.rotate(mine.id, 0, now, now + 120_000, NO_LIMIT)
    }))
    const rotations = outcomes.filter((o) => o.outcome === 'rotated').length
    if (rotations !== 1) wrong.push(`trial ${trial}: ${rotations} rotations`)
    const after = await store.rotate(mine.id, 1, Date.now(), Date.now() + 120_000, NO_LIMIT)
    if (!isDeepStrictEqual(after, { outcome: 'ended' })) wrong.push(`trial ${trial}: the session did not end (${JSON.stringify(after)})`)
  }
  return wrong
}

/** Within the reuse window: of presenters of generation 0 at once, one rotates and the rest repeat generation 1, and the session goes on. */
export async function windowedPresenters (store: SessionStore, trials: number): Promise<string[]> {
  const wrong: string[] = []
  for (let trial = 0; trial < trials; trial++) {
    // A user of its own per trial: these sessions go on, and one user's would reach the cap after CAP trials.
    const mine = sessionRecord({ userId: randomUUID() })
    await store.start(mine, CAP)
    const now = Date.now()
    const outcomes = await Promise.all(Array.from({ length: PRESENTERS }, () => store.rotate(mine.id, 0, now, now + 120_000, REUSE_WINDOW)))
    const kinds = outcomes.map((o) => o.outcome).sort()
    if (kinds.join() !== [...Array.from({ length: PRESENTERS - 1 }, () => 'repeated'), 'rotated'].join()) wrong.push(`trial ${trial}: ${kinds.join()}`)
    const generations = new Set(outcomes.map((o) => 'session' in o ? o.session.generation : -1))
    if (generations.size !== 1 || !generations.has(1)) wrong.push(`trial ${trial}: generations ${[...generations].join()}`)
    const after = await store.rotate(mine.id, 1, now, now + 120_000, REUSE_WINDOW)
    if (after.outcome !== 'rotated') wrong.push(`trial ${trial}: the session did not go on (${after.outcome})`)
  }
  return wrong
}

/** Starts a session and rotates it `rotations` times; answers how many records `count` saw before and after. */
export async function recordsAfterRotations (store: SessionStore, count: () => Promise<number>, rotations: number): Promise<{ before: number, after: number }> {
  const mine = sessionRecord()
  await store.start(mine, CAP)
  const before = await count()
  for (let generation = 0; generation < rotations; generation++) {
    const now = Date.now()
    const result = await store.rotate(mine.id, generation, now, now + 120_000, NO_LIMIT)
    if (result.outcome !== 'rotated') throw new Error(`refresh ${generation}: ${result.outcome}`)
  }
  return { before, after: await count() }
}
