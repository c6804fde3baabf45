import type { ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { CatsPage, CatsStore } from './cats-store.js'

/** Most cats of one page: the page size of `?after` without `limit`, and of the reads a streamed list is made of. */
export const LIST_CHUNK = 1000

/**
 * Most bytes of one chunk of a streamed list. A reader that stops reading pins a few chunks (the socket's,
 * the stream's and the page they are cut from), so this, not the size of the cats, bounds its memory.
 */
export const CHUNK_BYTES = 64 * 1024

/** What a list reads of a store. */
export type ListedStore = Pick<CatsStore, 'page' | 'pageEnd'>

export interface ListSettings {
  /** Most lists streamed at once (whole lists and pages alike); another one is refused until one ends. */
  maxStreams: number
  /** Longest a streamed list waits for its reader to take the next chunk (or, at the end, the last ones). */
  writeTimeoutMs: number
  /** Most bytes of one chunk (CHUNK_BYTES unless a test sets it). */
  chunkBytes?: number
  /** Most cats of one read of the store (LIST_CHUNK unless a test sets it). */
  pageCats?: number
}

/** Which list: the cats after the position `after` (0: from the first), all of them or the first `limit`. */
export interface ListQuery {
  after: number
  limit?: number
  /** The store's list version, read before the list: an answer that fits one chunk is kept for the next request of it. */
  version?: string
}

/** A list as JSON, with where it ends: the position of its last cat and whether cats follow it (for a page's Link). */
export interface ListAnswer {
  body: string | Readable
  last: number
  more: boolean
}

/**
 * The lists of one store, `GET /cats`: the whole list or a page. A list that fits one chunk is one string;
 * a longer one a stream, produced a chunk at a time only when the reader has taken the previous one, with
 * other requests served between chunks, under the cap on streams and the write timeout. A page keeps its
 * cats, counted when it begins (the Link header, sent first, names its end): cats removed before their chunk
 * is read are left out, none past its end is added. A whole list includes cats created while it streams.
 */
export class Lists {
  readonly #store: ListedStore
  readonly #maxStreams: number
  readonly #writeTimeoutMs: number
  readonly #chunkBytes: number
  readonly #pageCats: number
  #streams = 0
  /**
   * The last answer that fit one chunk, with the version and query it answered. The version is read before the
   * cats and changes with every write, so an answer kept under a version is that version's list: a list read again
   * unchanged is sent again without reading the store.
   */
  #kept: { version: string, after: number, limit: number, answer: ListAnswer } | undefined

  constructor (store: ListedStore, { maxStreams, writeTimeoutMs, chunkBytes = CHUNK_BYTES, pageCats = LIST_CHUNK }: ListSettings) {
    this.#store = store
    this.#maxStreams = maxStreams
    this.#writeTimeoutMs = writeTimeoutMs
    this.#chunkBytes = chunkBytes
    this.#pageCats = pageCats
  }

  /** Lists being streamed now. */
  get streams (): number {
    return this.#streams
  }

  /**
   * The list as JSON for `response`: a string, a stream, or undefined when `maxStreams` lists are streaming
   * already. A stream holds its place until the response closes, and ends the response when its reader takes
   * nothing for `writeTimeoutMs`.
   */
  async json (response: ServerResponse, { after, limit = Number.POSITIVE_INFINITY, version }: ListQuery): Promise<ListAnswer | undefined> {
    const kept = this.#kept
    if (kept !== undefined && kept.version === version && kept.after === after && kept.limit === limit) return kept.answer
    const first = await this.#store.page(after, Math.min(limit, this.#pageCats), this.#chunkBytes)
    // One chunk holds the list: the page's cats all fit, or none follows.
    if (!first.more || first.cats === limit) {
      const answer = { body: `[${first.items}]`, last: first.last, more: first.more }
      if (version !== undefined) this.#kept = { version, after, limit, answer }
      return answer
    }
    // A page ends where its cats, counted now, end; a whole list at the end of the store, whenever that is.
    const end = Number.isFinite(limit) ? await this.#store.pageEnd(first.last, limit - first.cats) : undefined
    // The client left while the first chunk was read: nothing will be sent, so no place is taken.
    if (response.closed) return { body: '', last: after, more: false }
    if (this.#streams >= this.#maxStreams) return undefined
    this.#streams++
    const stall = setTimeout(() => response.destroy(), this.#writeTimeoutMs)
    const stream = new ListStream(this.#store, first, end?.last, this.#pageCats, this.#chunkBytes, stall)
    response.once('close', () => {
      this.#streams--
      stream.responseClosed()
    })
    return { body: stream, last: end?.last ?? first.last, more: end?.more ?? false }
  }
}

/**
 * One list as bytes, up to the position `through` (undefined: the end of the store), in chunks of at most `chunkBytes`. With no buffer of its own (a high-water mark
 * of 0), it reads the next page only when the response asks for more, that is when the socket has taken
 * the chunks before. `stall` ends the response; every request for more restarts it.
 */
class ListStream extends Readable {
  readonly #store: ListedStore
  readonly #pageCats: number
  readonly #chunkBytes: number
  readonly #stall: NodeJS.Timeout
  readonly #through: number | undefined
  #after: number
  #more: boolean
  #chunks: Buffer[]

  constructor (store: ListedStore, first: CatsPage, through: number | undefined, pageCats: number, chunkBytes: number, stall: NodeJS.Timeout) {
    super({ highWaterMark: 0 })
    this.#store = store
    this.#through = through
    this.#pageCats = pageCats
    this.#chunkBytes = chunkBytes
    this.#stall = stall
    this.#after = first.last
    this.#more = first.more
    this.#chunks = this.#cut('[', first)
  }

  override _read (): void {
    this.#stall.refresh()
    this.#pushNext()
  }

  override _destroy (error: Error | null, done: (error?: Error | null) => void): void {
    clearTimeout(this.#stall)
    done(error)
  }

  /** The response is done (sent or destroyed): nothing waits for its reader any more. */
  responseClosed (): void {
    clearTimeout(this.#stall)
  }

  #pushNext (): void {
    const chunk = this.#chunks.shift()
    if (chunk !== undefined) this.push(chunk)
    else if (this.#more) this.#readPage().catch((error: Error) => this.destroy(error))
    else this.push(null)
  }

  async #readPage (): Promise<void> {
    // Other requests run between chunks, so no list of any size holds the event loop for long.
    await nextTurn()
    const page = await this.#store.page(this.#after, this.#pageCats, this.#chunkBytes, this.#through)
    if (this.destroyed) return
    this.#after = page.last
    this.#more = page.more
    this.#chunks = this.#cut(page.items === '' ? '' : ',', page)
    this.#pushNext()
  }

  /** A page's bytes, after `prefix` and, when it is the last, before the closing bracket, in chunks of at most chunkBytes. */
  #cut (prefix: string, page: CatsPage): Buffer[] {
    const suffix = page.more ? '' : ']'
    const size = Buffer.byteLength(page.items)
    // Written into one buffer, so that the page's text is not copied into a joined string first.
    const bytes = Buffer.allocUnsafe(prefix.length + size + suffix.length)
    bytes.write(prefix, 0, 'latin1')
    bytes.write(page.items, prefix.length)
    bytes.write(suffix, prefix.length + size, 'latin1')
    const chunks: Buffer[] = []
    for (let start = 0; start < bytes.length; start += this.#chunkBytes) chunks.push(bytes.subarray(start, start + this.#chunkBytes))
    return chunks
  }
}

const CURSOR_TEXT = /^[1-9][0-9]{0,14}$/

/** The opaque cursor a client passes as `after`: it names the position of the last cat it has seen. */
export const encodeCursor = (position: number): string => Buffer.from(String(position)).toString('base64url')

/** The position a cursor names, or undefined when it is not one this service made. */
export function decodeCursor (cursor: string): number | undefined {
  const text = Buffer.from(cursor, 'base64url').toString()
  return CURSOR_TEXT.test(text) && encodeCursor(Number(text)) === cursor ? Number(text) : undefined
}
