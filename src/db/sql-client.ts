import { fsyncSync } from 'node:fs'
import type { PGlite } from '@electric-sql/pglite'
import type { PoolClient } from 'pg'
import { importOptionalPeer } from '../optional-peer.js'
import { lockDirectory } from './directory-lock.js'
import { inChildSpan, SpanKind, type SpanStart } from '../tracing/spans.js'

// The drivers are optional peers, imported when a DATABASE_URL asks for them: the in-memory default needs neither.

/**
 * A statement run often enough to prepare: node-postgres parses and plans it once per connection under its name
 * (the name must stand for this text alone) unless prepared statements are off; PGlite has no named statements
 * and runs the text.
 */
export interface NamedStatement {
  name: string
  text: string
}

export interface SqlExecutor {
  query: <Row extends Record<string, unknown>>(statement: string | NamedStatement, params?: unknown[]) => Promise<Row[]>
}

/** Inside a transaction, also scripts of several statements (no parameters), such as a migration file. */
export interface SqlTransaction extends SqlExecutor {
  execScript: (sql: string) => Promise<void>
}

/** The little the SQL store needs from a database: queries, transactions, a health probe, close. */
export interface SqlClient extends SqlExecutor {
  /** Runs `work` in a transaction; on a PostgreSQL server all of it within `timeoutMs` (OPERATION_DEADLINE_MS unless said). */
  transaction: <T>(work: (tx: SqlTransaction) => Promise<T>, timeoutMs?: number) => Promise<T>
  /** Resolves when the database answers `statement` (a trivial query unless said) within `timeoutMs`. */
  ping: (timeoutMs: number, statement?: string) => Promise<void>
  close: () => Promise<void>
}

/** The most one query or one whole transaction may take, connecting included, so a request ends within 5 s. */
export const OPERATION_DEADLINE_MS = 3000

/** The error of an operation that ran past its deadline. */
export class DeadlineError extends Error {
  constructor (timeoutMs: number) {
    super(`The database did not answer within ${timeoutMs} ms`)
  }
}

/** How a PostgreSQL server is used; PGlite has one session and no named statements. */
export interface ClientOptions {
  /** Most connections in the pool; 10 unless said otherwise. */
  poolSize?: number
  /** Whether NamedStatements are prepared; true unless said otherwise. */
  preparedStatements?: boolean
}

/**
 * A statement's span: named for its NamedStatement, else for its first word. Its text has placeholders, never
 * values, and the parameters are not recorded.
 */
function statementSpan (statement: string | NamedStatement): SpanStart {
  const text = typeof statement === 'string' ? statement : statement.text
  const operation = /^\s*([A-Za-z]+)/.exec(text)?.[1].toUpperCase() ?? 'SQL'
  const attributes = { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': text.trim() }
  return typeof statement === 'string'
    ? { name: operation, kind: SpanKind.CLIENT, attributes }
    : { name: statement.name, kind: SpanKind.CLIENT, attributes: { ...attributes, 'db.query.summary': statement.name } }
}

// Internal: the calls to the database are its statements, each a client span below it.
const TRANSACTION_SPAN: SpanStart = { name: 'transaction', kind: SpanKind.INTERNAL, attributes: { 'db.system.name': 'postgresql' } }
const PING = 'SELECT 1'

/** Statements inside a transaction, each in its span (a child of the transaction's). */
function tracedTransaction (tx: SqlTransaction): SqlTransaction {
  return {
    query: (statement, params) => inChildSpan(() => statementSpan(statement), () => tx.query(statement, params)),
    execScript: (sql) => tx.execScript(sql)
  }
}

/**
 * The client with a span for each statement, transaction and probe made during a traced request (see
 * src/tracing/spans.ts), for PostgreSQL and PGlite alike. Without a recorded span in progress, each call only checks.
 */
function traced (client: SqlClient): SqlClient {
  return {
    query: (statement, params) => inChildSpan(() => statementSpan(statement), () => client.query(statement, params)),
    transaction: (work, timeoutMs) => inChildSpan(() => TRANSACTION_SPAN, () => client.transaction((tx) => work(tracedTransaction(tx)), timeoutMs)),
    ping: (timeoutMs, statement = PING) => inChildSpan(() => statementSpan(statement), () => client.ping(timeoutMs, statement)),
    close: () => client.close()
  }
}

/** PostgreSQL through a node-postgres pool. */
export async function postgresClient (connectionString: string, { poolSize = 10, preparedStatements = true }: ClientOptions = {}): Promise<SqlClient> {
  const { default: pg } = await importOptionalPeer('pg', 'DATABASE_URL is set', () => import('pg'))
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    connectionTimeoutMillis: 2000,
    idleTimeoutMillis: 10_000,
    // Bounds a slow statement inside a healthy server; the deadline below bounds everything else.
    statement_timeout: OPERATION_DEADLINE_MS
  })
  // A pooled connection that breaks while idle must not crash the process; the next query reconnects.
  pool.on('error', () => {})
  // A client checked out for a transaction has no pool 'error' listener: a connection lost mid-transaction must not crash the process.
  pool.on('connect', (client) => client.on('error', () => {}))

  const executor = (client: Pick<PoolClient, 'query'>): SqlExecutor => ({
    query: async <Row extends Record<string, unknown>>(statement: string | NamedStatement, params?: unknown[]) => {
      const result = typeof statement === 'string'
        ? await client.query<Row>(statement, params)
        : await client.query<Row>(preparedStatements ? { ...statement, values: params } : { text: statement.text, values: params })
      return result.rows
    }
  })

  /**
   * Runs `work` on a pooled connection with one deadline for all of it,
   * connecting included. A connection whose work failed or timed out is in an
   * unknown state: it is destroyed (PostgreSQL rolls back its transaction),
   * never returned to the pool.
   */
  async function withConnection<T> (work: (client: PoolClient) => Promise<T>, timeoutMs = OPERATION_DEADLINE_MS): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new DeadlineError(timeoutMs)), timeoutMs)
    })
    const connecting = pool.connect()
    let client: PoolClient | undefined
    try {
      client = await Promise.race([connecting, expired])
      const result = await Promise.race([work(client), expired])
      clearTimeout(timer)
      client.release()
      return result
    } catch (error) {
      clearTimeout(timer)
      if (client === undefined) {
        // Too late for this operation, but a connection that does arrive is healthy: back to the pool.
        connecting.then((late) => late.release(), () => {})
      } else {
        client.release(true)
      }
      throw error
    }
  }

  return traced({
    query: (statement, params) => withConnection((client) => executor(client).query(statement, params)),
    transaction: (work, timeoutMs = OPERATION_DEADLINE_MS) => withConnection(async (client) => {
      await client.query('BEGIN')
      // The connection's statement_timeout is the operation deadline: a longer transaction lifts it for itself.
      if (timeoutMs !== OPERATION_DEADLINE_MS) await client.query(`SET LOCAL statement_timeout = ${timeoutMs}`)
      const result = await work({ ...executor(client), execScript: async (sql) => { await client.query(sql) } })
      await client.query('COMMIT')
      return result
    }, timeoutMs),
    ping: async (timeoutMs, statement = PING) => {
      await withConnection((client) => client.query(statement), timeoutMs)
    },
    close: () => pool.end()
  })
}

/**
 * PostgreSQL's fsync(2) reaches PGlite's Node file system as a call that does
 * nothing. Giving that file system the missing operation makes every fsync
 * PostgreSQL asks for (the WAL at each commit, data files at checkpoints) a real
 * one, so an acknowledged commit survives a power loss.
 */
function enableFsync (db: PGlite): void {
  const nodefs: unknown = db.Module.FS.filesystems.NODEFS
  /* c8 ignore next 3 -- a PGlite build whose file system is laid out differently */
  if (typeof nodefs !== 'object' || nodefs === null || !('stream_ops' in nodefs) || typeof nodefs.stream_ops !== 'object' || nodefs.stream_ops === null) {
    throw new Error('PGlite: cannot enable fsync on this version')
  }
  Reflect.set(nodefs.stream_ops, 'fsync', (stream: { nfd: number }) => {
    fsyncSync(stream.nfd)
    return 0
  })
}

/**
 * Embedded PostgreSQL (WASM): `pglite://memory`, or `pglite://<directory>` to
 * keep the data on disk. A directory is locked for this process (one owner at
 * a time) and opened with fsync on: PGlite's defaults turn it off (`-F`).
 */
export async function pgliteClient (location: string): Promise<SqlClient> {
  // package.json pins PGlite to one version, so the hint names it (the package test compares the two).
  const { PGlite } = await importOptionalPeer('@electric-sql/pglite', 'DATABASE_URL is a pglite:// URL', () => import('@electric-sql/pglite'), '@electric-sql/pglite@0.5.14')
  const onDisk = location !== 'memory'
  const lock = onDisk ? await lockDirectory(location) : undefined
  let db: PGlite
  try {
    db = onDisk
      ? new PGlite(location, { startParams: [...PGlite.defaultStartParams.filter((param) => param !== '-F'), '-c', 'wal_sync_method=fsync'] })
      : new PGlite()
    await db.waitReady
    if (onDisk) {
      enableFsync(db)
      // Flushes what was written before fsync worked (a new database's files).
      await db.exec('CHECKPOINT')
    }
  } catch (error) {
    await lock?.release()
    throw error
  }
  const pglite = (target: Pick<PGlite, 'query' | 'exec'>): SqlTransaction => ({
    query: async <Row extends Record<string, unknown>>(statement: string | NamedStatement, params?: unknown[]) =>
      (await target.query<Row>(typeof statement === 'string' ? statement : statement.text, params)).rows,
    execScript: async (sql) => { await target.exec(sql) }
  })
  return traced({
    ...pglite(db),
    transaction: (work) => db.transaction((tx) => work(pglite(tx))),
    ping: async (_timeoutMs, statement = PING) => {
      await db.query(statement)
    },
    close: async () => {
      await db.close()
      await lock?.release()
    }
  })
}

/** Picks the client from DATABASE_URL: postgres://, postgresql:// or pglite://. */
export async function connect (databaseUrl: string, options: ClientOptions = {}): Promise<SqlClient> {
  const pglite = /^pglite:\/\/(.+)$/.exec(databaseUrl)
  return pglite === null ? postgresClient(databaseUrl, options) : pgliteClient(pglite[1])
}
