import type { PGlite } from '@electric-sql/pglite'

// The drivers are imported when a DATABASE_URL asks for them, so the in-memory default starts without loading them.

export interface SqlExecutor {
  query: <Row extends Record<string, unknown>>(text: string, params?: unknown[]) => Promise<Row[]>
}

/** Inside a transaction, also scripts of several statements (no parameters), such as a migration file. */
export interface SqlTransaction extends SqlExecutor {
  execScript: (sql: string) => Promise<void>
}

/** The little the SQL store needs from a database: queries, transactions, close. */
export interface SqlClient extends SqlExecutor {
  transaction: <T>(work: (tx: SqlTransaction) => Promise<T>) => Promise<T>
  close: () => Promise<void>
}

/** PostgreSQL through a node-postgres pool. */
export async function postgresClient (connectionString: string): Promise<SqlClient> {
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: 2000,
    idleTimeoutMillis: 10_000,
    statement_timeout: 5000,
    query_timeout: 6000
  })
  // A pooled connection that breaks while idle must not crash the process; the next query reconnects.
  pool.on('error', () => {})
  // A client checked out for a transaction has no pool 'error' listener: a connection lost mid-transaction must not crash the process.
  pool.on('connect', (client) => client.on('error', () => {}))
  return {
    query: async (text, params) => (await pool.query(text, params)).rows,
    transaction: async (work) => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const result = await work({
          query: async (text, params) => (await client.query(text, params)).rows,
          execScript: async (sql) => { await client.query(sql) }
        })
        await client.query('COMMIT')
        client.release()
        return result
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {})
        // A connection that failed mid-transaction is not reused.
        client.release(true)
        throw error
      }
    },
    close: () => pool.end()
  }
}

/** Embedded PostgreSQL (WASM): `pglite://memory`, or `pglite://<directory>` to keep the data on disk. */
export async function pgliteClient (location: string): Promise<SqlClient> {
  const { PGlite } = await import('@electric-sql/pglite')
  const db = location === 'memory' ? new PGlite() : new PGlite(location)
  await db.waitReady
  const executor = (target: Pick<PGlite, 'query' | 'exec'>): SqlTransaction => ({
    query: async <Row extends Record<string, unknown>>(text: string, params?: unknown[]) => (await target.query<Row>(text, params)).rows,
    execScript: async (sql) => { await target.exec(sql) }
  })
  return {
    ...executor(db),
    transaction: (work) => db.transaction((tx) => work(executor(tx))),
    close: () => db.close()
  }
}

/** Picks the client from DATABASE_URL: postgres://, postgresql:// or pglite://. */
export async function connect (databaseUrl: string): Promise<SqlClient> {
  const pglite = /^pglite:\/\/(.+)$/.exec(databaseUrl)
  return pglite === null ? postgresClient(databaseUrl) : pgliteClient(pglite[1])
}
