import type { UserId } from '../schemas.js'
import { userKey } from '../user-key.js'
import { decideRotation, endedRecord, outcomeOf } from './rotation.js'
import { DEFAULT_ENDED_KEEP_MS, SKEW_MARGIN_MS, type RefreshLimit, type Rotation, type SessionRecord, type SessionStore, type StartOutcome } from './session-store.js'

/** How often expired sessions are swept from memory. */
const SWEEP_INTERVAL_MS = 60_000

/** Sessions in this process's memory (one instance, no shared store); expired ones are swept on a timer. */
export class MemorySessionStore implements SessionStore {
  readonly #sessions = new Map<string, SessionRecord>()
  /** Each user's session ids, oldest first. */
  readonly #byUser = new Map<string, Set<string>>()
  readonly #sweeper: NodeJS.Timeout

  readonly #endedKeepMs: number

  constructor (sweepIntervalMs = SWEEP_INTERVAL_MS, endedKeepMs = DEFAULT_ENDED_KEEP_MS) {
    this.#sweeper = setInterval(() => this.sweep(), sweepIntervalMs).unref()
    this.#endedKeepMs = endedKeepMs
  }

  /** Sessions held, expired ones included until the next sweep. */
  get size (): number {
    return this.#sessions.size
  }

  async start (session: SessionRecord, maxPerUser: number, denied: readonly string[] = []): Promise<StartOutcome> {
    const key = userKey(session.userId)
    const ids = this.#byUser.get(key) ?? new Set<string>()
    // Oldest first: those beyond the newest maxPerUser - 1 make way for the new one (the cap is at least 1).
    const over = [...ids].slice(0, Math.max(0, ids.size + 1 - maxPerUser))
    const undenied = over.filter((id) => !denied.includes(id))
    if (undenied.length > 0) return { started: false, undenied }
    this.#byUser.set(key, ids)
    this.#sessions.set(session.id, session)
    ids.add(session.id)
    for (const id of over) this.#end(id, session.createdMs)
    return { started: true, ended: over }
  }

  async rotate (id: string, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit): Promise<Rotation> {
    const decision = decideRotation(this.#sessions.get(id), presented, nowMs, nextExpiresMs, limit)
    if (decision.action === 'rotate' || decision.action === 'repeat') this.#sessions.set(id, decision.next)
    if (decision.action === 'end') this.#end(id, nowMs)
    return outcomeOf(decision)
  }

  async endSession (id: string): Promise<void> {
    this.#end(id, Date.now())
  }

  async list (userId: UserId, nowMs: number): Promise<SessionRecord[]> {
    // The user's listed ids are live ones, each held in #sessions until swept (which unlists it too).
    const listed = [...this.#byUser.get(userKey(userId)) ?? []].map((id) => this.#sessions.get(id) as SessionRecord)
    return listed.filter((session) => session.expiresMs > nowMs)
  }

  async endSessions (userId: UserId, ids: readonly string[], nowMs: number): Promise<string[]> {
    const ended = (await this.list(userId, nowMs)).map((session) => session.id).filter((id) => ids.includes(id))
    for (const id of ended) this.#end(id, nowMs)
    return ended
  }

  /** Removes the sessions whose last token has expired (with the margin). */
  sweep (nowMs = Date.now()): void {
    for (const [id, session] of this.#sessions) {
      if (session.expiresMs + SKEW_MARGIN_MS > nowMs) continue
      this.#sessions.delete(id)
      this.#unlist(session)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }

  /** Marks the session ended and takes it off its user's live sessions. */
  #end (id: string, nowMs: number): void {
    const session = this.#sessions.get(id)
    if (session === undefined || session.ended) return
    this.#sessions.set(id, endedRecord(session, nowMs, this.#endedKeepMs))
    this.#unlist(session)
  }

  #unlist (session: SessionRecord): void {
    const key = userKey(session.userId)
    const ids = this.#byUser.get(key)
    ids?.delete(session.id)
    if (ids?.size === 0) this.#byUser.delete(key)
  }
}
