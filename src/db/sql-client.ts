import { fsyncSync } from 'node:fs'
import type { PGlite } from '@electric-sql/pglite'
import type { Connection, PoolClient, Query, QueryConfig, QueryResult, QueryResultRow } from 'pg'
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
  /**
   * Whether a pooler (PgBouncer) stands between the service and the server, sharing server sessions: no setting is
   * sent as a start-up parameter (a pooler refuses them) nor kept in a session; the statement timeout is set for
   * each transaction and each single statement instead. False unless said otherwise.
   */
  pooled?: boolean
}

/** What node-postgres's Query does, beyond its declared types, that a query with a preface builds on. */
interface QueryInternals {
  submit: (connection: Connection) => Error | null
  handleDataRow: (message: unknown) => void
  handleCommandComplete: (message: unknown, connection: Connection) => void
}

/** The statement that limits the statements after it, up to the end of their transaction (SET LOCAL's effect). */
const LOCAL_TIMEOUT = "SELECT set_config('statement_timeout', $1, true)"

/**
 * Sends `config` behind a preface that sets the statement timeout for its implicit transaction, in the same
 * extended-protocol message sequence (one Sync, one round trip): Parse, Bind and Execute of LOCAL_TIMEOUT, then the
 * statement's own, then Sync. PostgreSQL runs the messages up to a Sync as one transaction, so a pooler in
 * transaction mode keeps them on one server session, and it starts each Execute's timer with the setting then in
 * force. The preface's row and completion are not the statement's, so they are skipped.
 */
function timedQuery<Row extends QueryResultRow> (QueryClass: typeof Query, client: Pick<PoolClient, 'query'>, config: QueryConfig, timeoutMs: number): Promise<QueryResult<Row>> {
  return new Promise((resolve, reject) => {
    const base = QueryClass.prototype as unknown as QueryInternals
    // Extended protocol always: a simple query cannot follow the preface before its Sync.
    const extended: QueryConfig & { queryMode: 'extended' } = { ...config, queryMode: 'extended' }
    const query = new QueryClass<Row>(extended)
    let prefaceAnswered = false
    const internals: QueryInternals = {
      submit: (connection) => {
        // One write for all of it (the statement's own part corks and uncorks inside).
        connection.stream.cork()
        try {
          connection.parse({ name: '', text: LOCAL_TIMEOUT, types: [] }, false)
          connection.bind({ values: [String(timeoutMs)] }, false)
          connection.execute(null, false)
          return base.submit.call(query, connection)
        } finally {
          connection.stream.uncork()
        }
      },
      handleDataRow: (message) => { if (prefaceAnswered) base.handleDataRow.call(query, message) },
      handleCommandComplete: (message, connection) => {
        if (prefaceAnswered) base.handleCommandComplete.call(query, message, connection)
        prefaceAnswered = true
      }
    }
    Object.assign(query, internals)
    query.on('end', resolve)
    query.on('error', reject)
    client.query(query)
  })
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

/**
 * PostgreSQL through a node-postgres pool. Every statement is bounded on the server by statement_timeout (the
 * operation deadline): connected directly, it is a start-up parameter of each connection, which costs nothing per
 * statement; `pooled`, it is set for each transaction (`BEGIN; SET LOCAL …`, one simple query, the round trip BEGIN
 * took anyway) and each single statement (a preface in its own round trip, see timedQuery).
 */
export async function postgresClient (connectionString: string, { poolSize = 10, preparedStatements = true, pooled = false }: ClientOptions = {}): Promise<SqlClient> {
  const { default: pg } = await importOptionalPeer('pg', 'DATABASE_URL is set', () => import('pg'))
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    connectionTimeoutMillis: 2000,
    idleTimeoutMillis: 10_000,
    // Bounds a slow statement inside a healthy server; the deadline below bounds everything else. A pooler refuses
    // start-up parameters (PgBouncer: "unsupported startup parameter"), and a session setting would outlive the
    // transaction on a server session it shares: there, it is set per transaction and per statement instead.
    ...(pooled ? {} : { statement_timeout: OPERATION_DEADLINE_MS })
  })
  // A pooled connection that breaks while idle must not crash the process; the next query reconnects.
  pool.on('error', () => {})
  // A client checked out for a transaction has no pool 'error' listener: a connection lost mid-transaction must not crash the process.
  pool.on('connect', (client) => client.on('error', () => {}))

  const queryConfig = (statement: string | NamedStatement, params?: unknown[]): QueryConfig =>
    typeof statement === 'string' || !preparedStatements ? { text: typeof statement === 'string' ? statement : statement.text, values: params } : { ...statement, values: params }

  /** Statements inside a transaction, whose timeout is set: as they are. */
  const executor = (client: Pick<PoolClient, 'query'>): SqlExecutor => ({
    query: async <Row extends Record<string, unknown>>(statement: string | NamedStatement, params?: unknown[]) =>
      (await client.query<Row>(queryConfig(statement, params))).rows
  })

  /** A statement on its own: behind a pooler, with its timeout in the same round trip. */
  const single = async <Row extends Record<string, unknown>>(client: PoolClient, statement: string | NamedStatement, params?: unknown[], timeoutMs = OPERATION_DEADLINE_MS): Promise<Row[]> =>
    pooled ? (await timedQuery<Row>(pg.Query, client, queryConfig(statement, params), timeoutMs)).rows : await executor(client).query<Row>(statement, params)

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
    query: (statement, params) => withConnection((client) => single(client, statement, params)),
    transaction: (work, timeoutMs = OPERATION_DEADLINE_MS) => withConnection(async (client) => {
      // Directly connected, statement_timeout is the operation deadline: a longer transaction lifts it for itself.
      // Either way in the round trip of BEGIN (a simple query of two statements).
      await client.query(pooled || timeoutMs !== OPERATION_DEADLINE_MS ? `BEGIN; SET LOCAL statement_timeout = ${timeoutMs}` : 'BEGIN')
      const result = await work({ ...executor(client), execScript: async (sql) => { await client.query(sql) } })
      await client.query('COMMIT')
      return result
    }, timeoutMs),
    ping: async (timeoutMs, statement = PING) => {
      await withConnection((client) => single(client, statement, undefined, timeoutMs), timeoutMs)
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
