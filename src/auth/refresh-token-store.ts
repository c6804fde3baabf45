import type { UserId } from './schemas.js'
import { SWEEP_INTERVAL_MS } from './revocation-store.js'

/** What a stored refresh token stands for. The token itself is never stored, only its SHA-256 hash. */
export interface RefreshRecord {
  /** The session the token belongs to (the access tokens' `sid`). */
  sessionId: string
  userId: UserId
  username: string
  expiresAtMs: number
}

/** The result of presenting a refresh token. */
export type Rotation =
  | { outcome: 'rotated', record: RefreshRecord }
  /** The token was valid once but has already been exchanged: someone holds a copy. */
  | { outcome: 'reused', sessionId: string }
  | { outcome: 'invalid' }

/** Refresh tokens by hash. A rotated token is kept until it expires, so that its reuse is recognised. */
export interface RefreshTokenStore {
  add: (hash: Buffer, record: RefreshRecord) => Promise<void>
  /**
   * Exchanges the token with hash `hash` for one with hash `nextHash` in the same
   * session, expiring at `nextExpiresAtMs`, atomically: of two instances presenting
   * the same token, one rotates and the other sees a reuse.
   */
  rotate: (hash: Buffer, nextHash: Buffer, nextExpiresAtMs: number) => Promise<Rotation>
  /** Removes every refresh token of the session. */
  revokeSession: (sessionId: string) => Promise<void>
  close: () => Promise<void>
}

interface Entry {
  record: RefreshRecord
  rotated: boolean
  /** The keys of every token of the session, this one's included (shared by them all). */
  session: Set<string>
}

/** Refresh tokens in this process's memory; expired ones are swept out periodically. */
export class MemoryRefreshTokenStore implements RefreshTokenStore {
  readonly #byHash = new Map<string, Entry>()
  readonly #bySession = new Map<string, Set<string>>()
  readonly #sweeper: NodeJS.Timeout

  constructor (sweepIntervalMs = SWEEP_INTERVAL_MS) {
    this.#sweeper = setInterval(() => this.sweep(), sweepIntervalMs).unref()
  }

  /** Tokens held, rotated ones included. */
  get size (): number {
    return this.#byHash.size
  }

  async add (hash: Buffer, record: RefreshRecord): Promise<void> {
    this.#put(hash.toString('hex'), record)
  }

  async rotate (hash: Buffer, nextHash: Buffer, nextExpiresAtMs: number): Promise<Rotation> {
    const entry = this.#byHash.get(hash.toString('hex'))
    if (entry === undefined || entry.record.expiresAtMs <= Date.now()) return { outcome: 'invalid' }
    if (entry.rotated) return { outcome: 'reused', sessionId: entry.record.sessionId }
    entry.rotated = true
    const record = { ...entry.record, expiresAtMs: nextExpiresAtMs }
    this.#put(nextHash.toString('hex'), record)
    return { outcome: 'rotated', record }
  }

  async revokeSession (sessionId: string): Promise<void> {
    for (const key of this.#bySession.get(sessionId) ?? []) this.#byHash.delete(key)
    this.#bySession.delete(sessionId)
  }

  /** Removes the expired tokens. */
  sweep (nowMs = Date.now()): void {
    for (const [key, entry] of this.#byHash) {
      if (entry.record.expiresAtMs > nowMs) continue
      this.#byHash.delete(key)
      entry.session.delete(key)
      if (entry.session.size === 0) this.#bySession.delete(entry.record.sessionId)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }

  #put (key: string, record: RefreshRecord): void {
    let session = this.#bySession.get(record.sessionId)
    if (session === undefined) {
      session = new Set()
      this.#bySession.set(record.sessionId, session)
    }
    session.add(key)
    this.#byHash.set(key, { record, rotated: false, session })
  }
}
