/**
 * The denylist of access tokens that must no longer be accepted before they
 * expire: a token's `jti` after logout, a session's `sid` after logout or a
 * reused refresh token. Each entry lasts only as long as a token it denies could.
 */
export interface Denylist {
  /** Whether the token `jti` or its session `sid` is denied. Answers synchronously when it can (no I/O). */
  isRevoked: (jti: string, sid: string) => boolean | Promise<boolean>
  /** Denies `id` (a jti or a sid) until `untilMs` (epoch milliseconds). */
  revoke: (id: string, untilMs: number) => Promise<void>
  close: () => Promise<void>
}

/** How often expired entries are swept from the memory denylist. */
export const SWEEP_INTERVAL_MS = 60_000

/**
 * The denylist in this process's memory: a lookup is two Map reads, no I/O.
 * Expired entries are ignored at once and swept out periodically.
 */
export class MemoryDenylist implements Denylist {
  readonly #until = new Map<string, number>()
  readonly #sweeper: NodeJS.Timeout

  constructor (sweepIntervalMs = SWEEP_INTERVAL_MS) {
    this.#sweeper = setInterval(() => this.sweep(), sweepIntervalMs).unref()
  }

  /** Entries held, expired or not (until the next sweep). */
  get size (): number {
    return this.#until.size
  }

  isRevoked (jti: string, sid: string): boolean {
    // The map is usually small and the lookup misses: Date.now() only on a hit.
    if (this.#until.size === 0) return false
    return this.#denied(jti) || this.#denied(sid)
  }

  async revoke (id: string, untilMs: number): Promise<void> {
    this.#until.set(id, Math.max(untilMs, this.#until.get(id) ?? 0))
  }

  /** Removes the entries whose tokens have all expired. */
  sweep (nowMs = Date.now()): void {
    for (const [id, until] of this.#until) {
      if (until <= nowMs) this.#until.delete(id)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }

  #denied (id: string): boolean {
    const until = this.#until.get(id)
    return until !== undefined && until > Date.now()
  }
}
