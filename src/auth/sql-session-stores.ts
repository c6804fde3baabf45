import type { SqlClient } from '../cats/sql-client.js'
import type { DependencyStatus } from '../dependency-status.js'
import type { RefreshRecord, RefreshTokenStore, Rotation } from './refresh-token-store.js'
import type { RevocationStore } from './revocation-store.js'
import type { UserId } from './schemas.js'
import { guarded } from './session-errors.js'

/** The denylist in PostgreSQL (tables of migration 003): one indexed lookup per guarded request. */
export class SqlRevocationStore implements RevocationStore {
  constructor (private readonly client: SqlClient, private readonly status: DependencyStatus) {}

  async isRevoked (jti: string, sid: string): Promise<boolean> {
    const rows = await guarded(this.status, () => this.client.query(
      'SELECT 1 FROM revoked_tokens WHERE id IN ($1, $2) AND expires_at > now() LIMIT 1', [jti, sid]
    ))
    return rows.length > 0
  }

  async revoke (id: string, untilMs: number): Promise<void> {
    // Each revocation also sweeps the expired rows, so the table holds only live entries.
    await guarded(this.status, () => this.client.query(
      `WITH swept AS (DELETE FROM revoked_tokens WHERE expires_at <= now())
       INSERT INTO revoked_tokens (id, expires_at) VALUES ($1, to_timestamp($2::double precision / 1000))
       ON CONFLICT (id) DO UPDATE SET expires_at = GREATEST(revoked_tokens.expires_at, EXCLUDED.expires_at)`,
      [id, untilMs]
    ))
  }

  // The client belongs to the cats store, which closes it.
  async close (): Promise<void> {}
}

interface RefreshRow extends Record<string, unknown> {
  session_id: string
  user_id: string
  username: string
  rotated: boolean
  live: boolean
}

/** Refresh tokens in PostgreSQL (tables of migration 003). */
export class SqlRefreshTokenStore implements RefreshTokenStore {
  constructor (private readonly client: SqlClient, private readonly status: DependencyStatus) {}

  async add (hash: Buffer, record: RefreshRecord): Promise<void> {
    // Each login also sweeps the expired tokens.
    await guarded(this.status, () => this.client.query(
      `WITH swept AS (DELETE FROM refresh_tokens WHERE expires_at <= now())
       INSERT INTO refresh_tokens (token_hash, session_id, user_id, username, expires_at)
       VALUES ($1, $2, $3, $4, to_timestamp($5::double precision / 1000))`,
      [hash, record.sessionId, JSON.stringify(record.userId), record.username, record.expiresAtMs]
    ))
  }

  async rotate (hash: Buffer, nextHash: Buffer, nextExpiresAtMs: number): Promise<Rotation> {
    return guarded(this.status, () => this.client.transaction(async (tx): Promise<Rotation> => {
      // The row lock makes a second instance presenting the same token wait, then see it rotated.
      const [row] = await tx.query<RefreshRow>(
        `SELECT session_id, user_id, username, rotated, expires_at > now() AS live
         FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE`,
        [hash]
      )
      if (row === undefined || !row.live) return { outcome: 'invalid' }
      if (row.rotated) return { outcome: 'reused', sessionId: row.session_id }
      await tx.query('UPDATE refresh_tokens SET rotated = true WHERE token_hash = $1', [hash])
      await tx.query(
        `INSERT INTO refresh_tokens (token_hash, session_id, user_id, username, expires_at)
         VALUES ($1, $2, $3, $4, to_timestamp($5::double precision / 1000))`,
        [nextHash, row.session_id, row.user_id, row.username, nextExpiresAtMs]
      )
      const userId: UserId = JSON.parse(row.user_id)
      return { outcome: 'rotated', record: { sessionId: row.session_id, userId, username: row.username, expiresAtMs: nextExpiresAtMs } }
    }))
  }

  async revokeSession (sessionId: string): Promise<void> {
    await guarded(this.status, () => this.client.query('DELETE FROM refresh_tokens WHERE session_id = $1', [sessionId]))
  }

  async close (): Promise<void> {}
}
