import { schemaPrefix } from '../../db/own-schema.js'
import type { SqlClient } from '../../db/sql-client.js'
import type { DependencyStatus } from '../../dependency-status.js'
import type { Denylist } from './denylist.js'
import { sessionStoreCall } from './session-store.js'

/**
 * The denylist in PostgreSQL (tables of migration 003): one indexed lookup per guarded request. `schema` holds the
 * table (the service passes Database.schema; without it, the connection's search_path finds it).
 */
export class SqlDenylist implements Denylist {
  readonly #table: string

  constructor (private readonly client: SqlClient, private readonly status: DependencyStatus, schema?: string) {
    this.#table = `${schemaPrefix(schema)}revoked_tokens`
  }

  async isRevoked (jti: string, sid: string): Promise<boolean> {
    const rows = await sessionStoreCall(this.status, () => this.client.query(
      `SELECT 1 FROM ${this.#table} WHERE id IN ($1, $2) AND expires_at > now() LIMIT 1`, [jti, sid]
    ))
    return rows.length > 0
  }

  async revoke (id: string, untilMs: number): Promise<void> {
    // Each revocation also sweeps the expired rows, so the table holds only live entries.
    await sessionStoreCall(this.status, () => this.client.query(
      `WITH swept AS (DELETE FROM ${this.#table} WHERE expires_at <= now())
       INSERT INTO ${this.#table} AS revoked (id, expires_at) VALUES ($1, to_timestamp($2::double precision / 1000))
       ON CONFLICT (id) DO UPDATE SET expires_at = GREATEST(revoked.expires_at, EXCLUDED.expires_at)`,
      [id, untilMs]
    ))
  }

  // The client is the database's (plugins/app/database.ts), which closes it.
  async close (): Promise<void> {}
}
