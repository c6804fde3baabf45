import { schemaPrefix } from '../../db/own-schema.js'
import type { SqlClient, SqlExecutor } from '../../db/sql-client.js'
import type { DependencyStatus } from '../../dependency-status.js'
import { LegacyTokenHashes } from './legacy-refresh-tokens.js'
import type { UserId } from '../schemas.js'
import { decideRotation, outcomeOf } from './rotation.js'
import {
  DEFAULT_ENDED_KEEP_MS, sessionStoreCall, SKEW_MARGIN_MS, type RefreshLimit, type Rotation, type SessionRecord, type SessionStore, type StartOutcome
} from './session-store.js'
import { userKey } from '../user-key.js'

interface SessionRow extends Record<string, unknown> {
  id: string
  user_id: string
  username: string
  generation: number
  rotated_at_ms: string
  created_at_ms: string
  last_used_at_ms: string
  address: string
  user_agent: string
  expires_at_ms: string
  window_start_ms: string
  window_count: number
  ended: boolean
}

const COLUMNS = 'id, user_id, username, generation, rotated_at_ms, created_at_ms, last_used_at_ms, address, user_agent, expires_at_ms, window_start_ms, window_count, ended'

function recordOf (row: SessionRow): SessionRecord {
  const userId: UserId = JSON.parse(row.user_id)
  return {
    id: row.id,
    userId,
    username: row.username,
    generation: row.generation,
    rotatedMs: Number(row.rotated_at_ms),
    createdMs: Number(row.created_at_ms),
    lastUsedMs: Number(row.last_used_at_ms),
    address: row.address,
    userAgent: row.user_agent,
    expiresMs: Number(row.expires_at_ms),
    windowStartMs: Number(row.window_start_ms),
    windowCount: row.window_count,
    ended: row.ended
  }
}

/** Expired sessions swept by each login: a few at a time, so no login pays for a backlog. */
const SWEEP_BATCH = 100

/**
 * Sessions in PostgreSQL or PGlite (table of migration 007): one row per session, locked by each rotation. `schema`
 * holds the table (the service passes Database.schema; without it, the connection's search_path finds it).
 */
export class SqlSessionStore implements SessionStore {
  readonly #table: string

  constructor (private readonly client: SqlClient, private readonly status: DependencyStatus, private readonly endedKeepMs = DEFAULT_ENDED_KEEP_MS,
    schema?: string) {
    this.#table = `${schemaPrefix(schema)}sessions`
  }

  async start (session: SessionRecord, maxPerUser: number, denied: readonly string[] = []): Promise<StartOutcome> {
    return sessionStoreCall(this.status, () => this.client.transaction(async (tx): Promise<StartOutcome> => {
      // One user's logins take turns, so two at once cannot both stay under the cap.
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('sessions:' || $1))", [userKey(session.userId)])
      // The user's live sessions beyond the newest maxPerUser - 1 make way for the new one, once they are denied.
      const over = (await tx.query<{ id: string }>(
        `SELECT id FROM ${this.#table} WHERE user_id = $1 AND NOT ended AND expires_at_ms > $3 ORDER BY created_at_ms DESC, id OFFSET $2`,
        [userKey(session.userId), maxPerUser - 1, session.createdMs]
      )).map((row) => row.id)
      const undenied = over.filter((id) => !denied.includes(id))
      if (undenied.length > 0) return { started: false, undenied }
      await tx.query(
        `INSERT INTO ${this.#table} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
        [session.id, userKey(session.userId), session.username, session.generation, session.rotatedMs, session.createdMs, session.lastUsedMs,
          session.address, session.userAgent, session.expiresMs, session.windowStartMs, session.windowCount, session.ended]
      )
      // NOT ended is checked again on the row itself: a logout of other sessions may have ended one since it was read.
      const ended = over.length === 0
        ? []
        : await tx.query<{ id: string }>(
          `UPDATE ${this.#table} SET ended = true, expires_at_ms = LEAST(expires_at_ms, $2) WHERE id = ANY($1::text[]) AND NOT ended RETURNING id`,
          [over, session.createdMs + this.endedKeepMs]
        )
      await sweep(tx, this.#table, session.createdMs)
      return { started: true, ended: ended.map((row) => row.id) }
    }))
  }

  async rotate (id: string, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit): Promise<Rotation> {
    return sessionStoreCall(this.status, () => this.client.transaction(async (tx) => {
      // The row lock makes every other rotation or end of this session wait, then see this one's outcome.
      const [row] = await tx.query<SessionRow>(`SELECT ${COLUMNS} FROM ${this.#table} WHERE id = $1 FOR UPDATE`, [id])
      const decision = decideRotation(row === undefined ? undefined : recordOf(row), presented, nowMs, nextExpiresMs, limit)
      if (decision.action === 'rotate' || decision.action === 'repeat') {
        const { next } = decision
        await tx.query(
          `UPDATE ${this.#table} SET generation = $2, rotated_at_ms = $3, last_used_at_ms = $4, expires_at_ms = $5, window_start_ms = $6, window_count = $7
           WHERE id = $1`,
          [id, next.generation, next.rotatedMs, next.lastUsedMs, next.expiresMs, next.windowStartMs, next.windowCount]
        )
      }
      if (decision.action === 'end') await this.#markEnded(tx, id, nowMs)
      return outcomeOf(decision)
    }))
  }

  async endSession (id: string): Promise<void> {
    await sessionStoreCall(this.status, () => this.#markEnded(this.client, id, Date.now()))
  }

  async list (userId: UserId, nowMs: number): Promise<SessionRecord[]> {
    const rows = await sessionStoreCall(this.status, () => this.client.query<SessionRow>(
      `SELECT ${COLUMNS} FROM ${this.#table} WHERE user_id = $1 AND NOT ended AND expires_at_ms > $2 ORDER BY created_at_ms, id`,
      [userKey(userId), nowMs]
    ))
    return rows.map(recordOf)
  }

  async endSessions (userId: UserId, ids: readonly string[], nowMs: number): Promise<string[]> {
    const ended = await sessionStoreCall(this.status, () => this.client.query<{ id: string }>(
      `UPDATE ${this.#table} SET ended = true, expires_at_ms = LEAST(expires_at_ms, $4)
       WHERE id = ANY($1::text[]) AND user_id = $2 AND NOT ended AND expires_at_ms > $3 RETURNING id`,
      [ids, userKey(userId), nowMs, nowMs + this.endedKeepMs]
    ))
    return ended.map((row) => row.id)
  }

  async #markEnded (executor: SqlExecutor, id: string, nowMs: number): Promise<void> {
    await executor.query(
      `UPDATE ${this.#table} SET ended = true, expires_at_ms = LEAST(expires_at_ms, $2) WHERE id = $1 AND NOT ended`,
      [id, nowMs + this.endedKeepMs]
    )
  }

  /** The hashes of the pre-upgrade refresh tokens, read at the first token of that form (see LegacyTokenHashes). */
  #legacyHashes: Promise<LegacyTokenHashes> | undefined

  /**
   * The session whose pre-upgrade refresh token has this SHA-256 hash: that token is its generation 0. A hash that
   * no such token has is answered without a query, once the process has read them (one query, at the first).
   */
  async legacySession (tokenHash: Buffer): Promise<string | undefined> {
    this.#legacyHashes ??= sessionStoreCall(this.status, () => this.client.query<{ legacy_token_hash: Uint8Array }>(
      `SELECT legacy_token_hash FROM ${this.#table} WHERE legacy_token_hash IS NOT NULL`
    )).then((rows) => new LegacyTokenHashes(rows.map((row) => row.legacy_token_hash)), (error: unknown) => {
      // Read again at the next token of that form.
      this.#legacyHashes = undefined
      throw error
    })
    if (!(await this.#legacyHashes).mayHave(tokenHash)) return undefined
    const [row] = await sessionStoreCall(this.status, () => this.client.query<{ id: string }>(
      `SELECT id FROM ${this.#table} WHERE legacy_token_hash = $1`, [tokenHash]
    ))
    return row?.id
  }

  // The client is the database's (plugins/app/database.ts), which closes it.
  async close (): Promise<void> {}
}

async function sweep (tx: SqlExecutor, table: string, nowMs: number): Promise<void> {
  await tx.query(
    `DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE expires_at_ms <= $1 LIMIT $2)`,
    [nowMs - SKEW_MARGIN_MS, SWEEP_BATCH]
  )
}
