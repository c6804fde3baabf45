import type DataLoader from 'dataloader'
import type { CreateCatBody, StoredCat, UpdateCatBody } from './schemas.js'
import {
  IDEMPOTENCY_KEY_TTL_MS, NO_LIMITS, idempotencyKeyBytes, meetsCondition, type CatsPage, type CatsStore, type PageEnd, type IdempotentCreateResult,
  type IdempotentRequest, type StoreLimits, type VersionCondition, type VersionedCat
} from './cats-store.js'
import { mergedEntries } from './merge-rules.js'
import { patchWithinLimit } from './merge-patch.js'
import { batchedStatements } from '../db/batched-statements.js'
import { CatTooLarge, CollectionFull, IdempotencyKeyInUse, IdempotencyKeyReused, PreconditionFailed, StoreUnavailable } from '../errors.js'
import type { NamedStatement, SqlClient, SqlExecutor, SqlTransaction } from '../db/sql-client.js'
import { callDependency, type Availability } from '../dependency-status.js'
import { schemaPrefix } from '../db/own-schema.js'

interface DataRow extends Record<string, unknown> {
  data: StoredCat
}

/** A cat cats_create_many created: its body's place in the batch (from 1), its record and that record's JSON text. */
interface CreatedRow extends DataRow {
  place: number
  json: string
}

interface KeyRow extends Record<string, unknown> {
  fingerprint: string
  response: string
}

/** Held until the transaction ends: a second request with the key while the first runs finds it taken. */
const LOCK_KEY = 'SELECT pg_try_advisory_xact_lock(hashtext($1), hashtext($2)) AS locked'

/** A limit as PostgreSQL takes it: no limit is the largest number both sides agree on. */
const bound = (limit: number): number => Math.min(limit, Number.MAX_SAFE_INTEGER)

/** The largest bigint: the upper bound of a page read without one. */
const MAX_BIGINT = '9223372036854775807'

interface PageRow extends Record<string, unknown> {
  items: string
  cats: number
  last: string
  more: boolean
}

interface FoundRow extends Record<string, unknown> {
  id: string
  json: string
  version: string
}

interface LockedRow extends Record<string, unknown> {
  seq: string
  json: string
  version: string
}

/**
 * The store's statements, each naming the schema of the package's objects (`"schema".`; empty: the connection's
 * search_path), so no connection setting decides which tables they reach.
 */
function statements (s: string) {
  /** The earliest created cat with the id $1: read, update and delete act on it. */
  const EARLIEST_WITH_ID = `FROM ${s}cats WHERE id = $1 ORDER BY seq LIMIT 1`
  /** A version as the store answers it: the database's epoch and the number (see migration 10). */
  const TAG = `(SELECT epoch FROM ${s}cats_count) || '.' || version`
  return {
    COUNT: `SELECT count FROM ${s}cats_count`,
    LIST_VERSION: `SELECT epoch || '.' || changes AS changes FROM ${s}cats_count`,
    /** A key recorded within its lifetime (expired ones are deleted as new keys are recorded). */
    FIND_KEY: `SELECT fingerprint, response FROM ${s}idempotency_keys WHERE scope = $1 AND key = $2 AND created_at_ms > $3`,
    /** Records a key and lets go of the keys past their lifetime or beyond the limits (idempotency_key_record, a migration's). */
    RECORD_KEY: `SELECT ${s}idempotency_key_record($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    /**
     * Up to $2 cats after the position $1 and, with $4, up to the position $4; with $3, only those whose texts and
     * commas fit in $3 bytes (the first cat always). The page is cut in the database, so the service never receives
     * more than that. Both ends of seq are index bounds, so finding whether more follow never walks past $4.
     */
    PAGE: `
WITH following AS (
  SELECT seq, data::text AS json FROM ${s}cats
  WHERE seq > $1::bigint AND seq <= coalesce($4::bigint, ${MAX_BIGINT}) ORDER BY seq LIMIT $2
),
sized AS (
  SELECT seq, json, row_number() OVER (ORDER BY seq) AS place, sum(octet_length(json) + 1) OVER (ORDER BY seq) - 1 AS bytes FROM following
),
page AS (SELECT seq, json FROM sized WHERE place = 1 OR $3::bigint IS NULL OR bytes <= $3::bigint)
SELECT coalesce(string_agg(json, ',' ORDER BY seq), '') AS items, count(*)::integer AS cats,
  coalesce(max(seq), $1::bigint)::text AS last,
  EXISTS (
    SELECT 1 FROM ${s}cats WHERE seq > (SELECT coalesce(max(seq), $1::bigint) FROM page) AND seq <= coalesce($4::bigint, ${MAX_BIGINT})
  ) AS more
FROM page`,
    /** Where the page of up to $2 cats after the position $1 ends: the primary key's index alone, no cat's text. */
    PAGE_END: `
WITH following AS (SELECT seq FROM ${s}cats WHERE seq > $1::bigint ORDER BY seq LIMIT $2)
SELECT coalesce(max(seq), $1::bigint)::text AS last,
  EXISTS (SELECT 1 FROM ${s}cats WHERE seq > (SELECT coalesce(max(seq), $1::bigint) FROM following)) AS more
FROM following`,
    REMOVE: `
WITH gone AS (
  DELETE FROM ${s}cats WHERE seq = (SELECT seq ${EARLIEST_WITH_ID} FOR UPDATE) RETURNING seq
)
UPDATE ${s}cats_count SET count = count - (SELECT count(*) FROM gone)`,
    REMOVE_LOCKED: `DELETE FROM ${s}cats WHERE seq = $1`,
    UNCOUNT: `UPDATE ${s}cats_count SET count = count - 1`,
    /** The earliest created cats with the ids in the array $1: GET /cats/:id, many requests at once. */
    FIND_MANY: {
      name: 'cats_find_many',
      text: `SELECT DISTINCT ON (id) id::text, data::text AS json, ${TAG} AS version FROM ${s}cats WHERE id = ANY($1::bigint[]) ORDER BY id, seq`
    } satisfies NamedStatement,
    /** A conditional write's first step: the earliest created cat with the id $1, locked until the transaction ends. */
    LOCK_EARLIEST: `SELECT seq::text, data::text AS json, ${TAG} AS version ${EARLIEST_WITH_ID} FOR UPDATE`,
    /**
     * POSTs in one round trip, many at once (cats_create_many): ids, creation order and the collection limit as one
     * create each. The count's row lock serializes creates across instances but is held only inside PostgreSQL.
     */
    CREATE_MANY: {
      name: 'cats_create_many',
      text: `SELECT place::int AS place, cat_data AS data, cat_data::text AS json FROM ${s}cats_create_many($1, $2)`
    } satisfies NamedStatement,
    /**
     * PUTs in one round trip, many at once: the merges run in the database (cats_merge_many, created by a migration),
     * row locks and size limit included, one row per merge in the order given.
     */
    MERGE_MANY: {
      name: 'cats_merge_many_versioned',
      text: `SELECT has_cat, data::text AS json, ${TAG} AS version FROM ${s}cats_merge_many_versioned($1, $2, $3, $4, $5) ` +
        'WITH ORDINALITY AS merged(has_cat, data, version, place) ORDER BY place'
    } satisfies NamedStatement,
    /** A PUT with a condition, under the cat's row lock its transaction holds. */
    MERGE_ONE: `SELECT data::text AS json, ${TAG} AS version FROM ${s}cats_merge_versioned($1, $2, $3, $4)`,
    /** A PATCH's result written back to the locked cat. */
    WRITE_LOCKED: `UPDATE ${s}cats SET data = $2::json WHERE seq = $1 RETURNING ${TAG} AS version`
  }
}
/** Reads: at most 500 in one statement, as many statements at once as the pool has connections. */
const READ_BATCHES = { maxBatchSize: 500 }

/**
 * Creates: at most 100 in one statement, one statement running at once per instance (creates take turns at the
 * count's row lock anyway; meanwhile the next ones gather), and none waits more than 100 ms for it to end.
 */
const CREATE_BATCHES = { maxBatchSize: 100, maxInFlight: 1, maxWaitMs: 100 }

/** A PUT as the database takes it: the fields as JSON texts, so that it splices them into the stored text without decoding them. */
interface Merge {
  id: number
  keys: string[]
  values: string[]
}

/** What the database answered for one merge: has_cat null when no cat has the id, json null when over the size limit. */
interface MergedRow extends Record<string, unknown> {
  has_cat: boolean | null
  json: string | null
  version: string | null
}

/** A merge's outcome: the merged cat, no cat with the id (undefined), or over the size limit. */
type MergeOutcome = VersionedCat | undefined | typeof TOO_LARGE
const TOO_LARGE = Symbol('too large')

/**
 * Merges: at most 100 in one statement (they hold their cats' row locks until all are done), at most 2 statements
 * running at once per instance, and none waits more than 100 ms for one of those to end.
 */
const MERGE_BATCHES = { maxBatchSize: 100, maxInFlight: 2, maxWaitMs: 100 }

const unavailable = (cause: unknown): Error => new StoreUnavailable({ cause })

/** Cats in PostgreSQL (node-postgres or PGlite), with the same semantics as the in-memory store. */
export class SqlCatsStore implements CatsStore {
  readonly #client: SqlClient
  readonly #limits: StoreLimits
  readonly #availability: Availability
  readonly #now: () => number
  readonly #sql: ReturnType<typeof statements>
  /** GET /cats/:id: the reads of one turn of the event loop in one statement. */
  readonly #reads: DataLoader<number, VersionedCat | undefined>
  /**
   * PUT /cats/:id: the merges of one turn (or of the wait for a running statement) in one statement, committed
   * together. They are sent ordered by id (those into one cat in the order they arrived), so concurrent statements
   * lock cats in one order and never wait for each other in a cycle.
   */
  readonly #merges: DataLoader<Merge, MergeOutcome>
  /**
   * POST /cats without an Idempotency-Key: the creates of one turn (or of the wait for the running statement) in one
   * statement, committed together, in the order they arrived.
   */
  readonly #creates: DataLoader<CreateCatBody, CreatedRow>

  /**
   * `availability` hears whether each operation reached the database; `now` is the clock idempotency keys
   * expire by (milliseconds), the same on every instance as far as clocks agree; `schema` holds the tables (the
   * service passes Database.schema; without it, statements reach them through the connection's search_path).
   */
  constructor (client: SqlClient, limits: StoreLimits = NO_LIMITS, { availability, now = Date.now, schema }: {
    availability?: Availability
    now?: () => number
    schema?: string
  } = {}) {
    this.#client = client
    this.#sql = statements(schemaPrefix(schema))
    const { FIND_MANY, MERGE_MANY } = this.#sql
    this.#limits = limits
    this.#availability = availability
    this.#now = now
    this.#reads = batchedStatements(async (ids) => {
      const rows = await this.#client.query<FoundRow>(FIND_MANY, [ids])
      const found = new Map(rows.map(({ id, json, version }) => [id, { json, version }]))
      return ids.map((id) => found.get(String(id)))
    }, READ_BATCHES)
    this.#merges = batchedStatements(async (merges) => {
      const order = merges.map((merge, index) => ({ merge, index })).sort((a, b) => a.merge.id - b.merge.id || a.index - b.index)
      const sorted = order.map(({ merge }) => merge)
      const maxBytes = bound(this.#limits.maxCatBytes)
      const rows = await this.#client.query<MergedRow>(MERGE_MANY, [
        sorted.map((merge) => merge.id), sorted.map((merge) => merge.keys.length), sorted.flatMap((merge) => merge.keys),
        sorted.flatMap((merge) => merge.values), maxBytes
      ])
      const outcomes: MergeOutcome[] = new Array(merges.length)
      order.forEach(({ index }, place) => {
        const { has_cat: hasCat, json, version } = rows[place]
        outcomes[index] = hasCat === null ? undefined : json === null || version === null ? TOO_LARGE : { json, version }
      })
      return outcomes
    }, MERGE_BATCHES)
    this.#creates = batchedStatements<CreateCatBody, CreatedRow>(async (cats) =>
      (await this.#insert(this.#client, cats)).map((row) => row ?? new CollectionFull(this.#limits.maxCats)), CREATE_BATCHES)
  }

  async count (): Promise<number> {
    return this.#callDatabase(async () => {
      const [row] = await this.#client.query<{ count: string }>(this.#sql.COUNT)
      return Number(row.count)
    })
  }

  async listVersion (): Promise<string> {
    return this.#callDatabase(async () => {
      const [row] = await this.#client.query<{ changes: string }>(this.#sql.LIST_VERSION)
      return row.changes
    })
  }

  async page (after: number, limit: number, maxBytes?: number, through?: number): Promise<CatsPage> {
    return this.#callDatabase(async () => {
      // data::text is the JSON exactly as written, so no parse and re-serialize; seq > $1 walks the primary key.
      const [row] = await this.#client.query<PageRow>(this.#sql.PAGE, [after, limit, maxBytes ?? null, through ?? null])
      return { items: row.items, cats: row.cats, last: Number(row.last), more: row.more }
    })
  }

  async pageEnd (after: number, limit: number): Promise<PageEnd> {
    return this.#callDatabase(async () => {
      const [row] = await this.#client.query<{ last: string, more: boolean }>(this.#sql.PAGE_END, [after, limit])
      return { last: Number(row.last), more: row.more }
    })
  }

  async find (id: number): Promise<VersionedCat | undefined> {
    return this.#callDatabase(() => this.#reads.load(id))
  }

  /** The new cat as the batched create of its turn inserted it. */
  async createJson (fields: CreateCatBody): Promise<string> {
    return (await this.#callDatabase(() => this.#creates.load(fields))).json
  }

  async createOnce (fields: CreateCatBody, request: IdempotentRequest): Promise<IdempotentCreateResult> {
    const { scope, key, fingerprint, client } = request
    const now = this.#now()
    const expiredAt = now - IDEMPOTENCY_KEY_TTL_MS
    const { maxKeys, maxBytes, clientMaxKeys, clientMaxBytes } = this.#limits.idempotencyKeys
    return this.#callDatabase(() => this.#client.transaction(async (tx) => {
      const [{ locked }] = await tx.query<{ locked: boolean }>(LOCK_KEY, [scope, key])
      if (!locked) throw new IdempotencyKeyInUse()
      const [kept] = await tx.query<KeyRow>(this.#sql.FIND_KEY, [scope, key, expiredAt])
      if (kept !== undefined) {
        if (kept.fingerprint !== fingerprint) throw new IdempotencyKeyReused()
        return { replayed: true, json: kept.response }
      }
      // In the same transaction: the key is committed with its cat or not at all. The create holds the count's
      // row lock from here on, so keys are recorded (and the limits checked) by one transaction at a time.
      const [row] = await this.#insert(tx, [fields])
      if (row === undefined) throw new CollectionFull(this.#limits.maxCats)
      await tx.query(this.#sql.RECORD_KEY, [
        scope, key, client, fingerprint, row.json, idempotencyKeyBytes(request, row.json), now, expiredAt,
        bound(clientMaxKeys), bound(clientMaxBytes), bound(maxKeys), bound(maxBytes)
      ])
      return { replayed: false, json: row.json }
    }))
  }

  /**
   * Creates the cats in the order given, in one statement; each one's row, or undefined past the collection
   * limit. The database writes each JSON text as JSON.stringify({ id, name, age, breed }) would.
   */
  async #insert (executor: SqlExecutor, cats: readonly CreateCatBody[]): Promise<Array<CreatedRow | undefined>> {
    const bodies = cats.map(({ name, age, breed }) => JSON.stringify({ name, age, breed }))
    const rows = await executor.query<CreatedRow>(this.#sql.CREATE_MANY, [bodies, Math.min(this.#limits.maxCats, Number.MAX_SAFE_INTEGER)])
    const created = new Map(rows.map((row) => [row.place, row]))
    return cats.map((_, index) => created.get(index + 1))
  }

  /**
   * The merged cat as the database wrote it: the text JSON.stringify writes for the merge, passed on unparsed.
   * Without a condition, in the batched merge of its turn; with one, in a transaction that checks the version
   * under the cat's row lock, so of two writes with the same If-Match only the first to lock succeeds.
   */
  async update (id: number, fields: UpdateCatBody, condition?: VersionCondition): Promise<VersionedCat | undefined> {
    const entries = mergedEntries(fields)
    const keys = entries.map(([key]) => JSON.stringify(key))
    const values = entries.map(([, value]) => JSON.stringify(value))
    const maxBytes = bound(this.#limits.maxCatBytes)
    const outcome = condition === undefined
      ? await this.#callDatabase(() => this.#merges.load({ id, keys, values }))
      : await this.#conditional(id, condition, async (tx) => {
        const [row] = await tx.query<{ json: string | null, version: string | null }>(
          this.#sql.MERGE_ONE, [id, keys, values, maxBytes])
        return row.json === null || row.version === null ? TOO_LARGE : { json: row.json, version: row.version }
      })
    if (outcome === TOO_LARGE) throw new CatTooLarge(this.#limits.maxCatBytes)
    return outcome
  }

  /** The patch is applied here to the stored text, under the cat's row lock, and the result written back. */
  async patch (id: number, patch: UpdateCatBody, condition?: VersionCondition): Promise<VersionedCat | undefined> {
    return this.#conditional(id, condition, async (tx, locked) => {
      const { json } = patchWithinLimit(JSON.parse(locked.json), patch, this.#limits.maxCatBytes)
      const [{ version }] = await tx.query<{ version: string }>(this.#sql.WRITE_LOCKED, [locked.seq, json])
      return { json, version }
    })
  }

  async remove (id: number, condition?: VersionCondition): Promise<void> {
    if (condition === undefined) {
      await this.#callDatabase(() => this.#client.query(this.#sql.REMOVE, [id]))
      return
    }
    await this.#conditional(id, condition, async (tx, locked) => {
      await tx.query(this.#sql.REMOVE_LOCKED, [locked.seq])
      await tx.query(this.#sql.UNCOUNT)
    })
  }

  /**
   * Runs `write` in a transaction holding the row lock of the earliest created cat with the id, when the condition
   * holds (throws PreconditionFailed when it does not); undefined when no cat has the id.
   */
  async #conditional<T> (id: number, condition: VersionCondition | undefined,
    write: (tx: SqlTransaction, locked: LockedRow) => Promise<T>): Promise<T | undefined> {
    return this.#callDatabase(() => this.#client.transaction(async (tx) => {
      const [locked] = await tx.query<LockedRow>(this.#sql.LOCK_EARLIEST, [id])
      if (condition !== undefined && !meetsCondition(condition, locked?.version)) throw new PreconditionFailed()
      return locked === undefined ? undefined : await write(tx, locked)
    }))
  }

  /** Runs a statement; a database failure becomes StoreUnavailable (see `callDependency`). */
  async #callDatabase<T> (work: () => Promise<T>): Promise<T> {
    return callDependency(this.#availability, unavailable, work)
  }
}
