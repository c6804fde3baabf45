import type { ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { CatsPage, CatsStore } from './cats-store.js'

/** Most cats of one page: the page size of `?after` without `limit`, and of the pages a whole list is read in. */
export const LIST_CHUNK = 1000

/**
 * Most bytes of one chunk of a streamed list. A reader that stops reading pins a few chunks (the socket's,
 * the stream's and the page they are cut from), so this, not the size of the cats, bounds its memory.
 */
export const CHUNK_BYTES = 64 * 1024

/** What a whole list reads of a store. */
export type ListedStore = Pick<CatsStore, 'page'>

export interface WholeListSettings {
  /** Most whole lists streamed at once; another one is refused until one ends. */
  maxStreams: number
  /** Longest a streamed list waits for its reader to take the next chunk (or, at the end, the last ones). */
  writeTimeoutMs: number
  /** Most bytes of one chunk (CHUNK_BYTES unless a test sets it). */
  chunkBytes?: number
  /** Most cats of one page (LIST_CHUNK unless a test sets it). */
  pageCats?: number
}

/**
 * The whole lists of one store, `GET /cats` without a query. A list that fits one chunk is one string; a
 * longer one a stream, produced a page at a time only when the reader has taken the previous chunk, with
 * other requests served between pages. Cats created while it streams are included; a cat removed before
 * its page is read is not.
 */
export class WholeLists {
  readonly #store: ListedStore
  readonly #maxStreams: number
  readonly #writeTimeoutMs: number
  readonly #chunkBytes: number
  readonly #pageCats: number
  #streams = 0

  constructor (store: ListedStore, { maxStreams, writeTimeoutMs, chunkBytes = CHUNK_BYTES, pageCats = LIST_CHUNK }: WholeListSettings) {
    this.#store = store
    this.#maxStreams = maxStreams
    this.#writeTimeoutMs = writeTimeoutMs
    this.#chunkBytes = chunkBytes
    this.#pageCats = pageCats
  }

  /** Whole lists being streamed now. */
  get streams (): number {
    return this.#streams
  }

  /**
   * The whole list as JSON for `response`: a string, a stream, or undefined when `maxStreams` lists are
   * streaming already. A stream holds its place until the response closes, and ends the response when
   * its reader takes nothing for `writeTimeoutMs`.
   */
  async json (response: ServerResponse): Promise<string | Readable | undefined> {
    const first = await this.#store.page(0, this.#pageCats, this.#chunkBytes)
    if (!first.more) return `[${first.items}]`
    // The client left while the first page was read: nothing will be sent, so no place is taken.
    if (response.closed) return ''
    if (this.#streams >= this.#maxStreams) return undefined
    this.#streams++
    const stream = new ListStream(this.#store, first, this.#pageCats, this.#chunkBytes, setTimeout(() => response.destroy(), this.#writeTimeoutMs))
    response.once('close', () => {
      this.#streams--
      stream.responseClosed()
    })
    return stream
  }
}

/**
 * One whole list as bytes, in chunks of at most `chunkBytes`. With no buffer of its own (a high-water mark
 * of 0), it reads the next page only when the response asks for more, that is when the socket has taken
 * the chunks before. `stall` ends the response; every request for more restarts it.
 */
class ListStream extends Readable {
  readonly #store: ListedStore
  readonly #pageCats: number
  readonly #chunkBytes: number
  readonly #stall: NodeJS.Timeout
  #after: number
  #more: boolean
  #chunks: Buffer[]

  constructor (store: ListedStore, first: CatsPage, pageCats: number, chunkBytes: number, stall: NodeJS.Timeout) {
    super({ highWaterMark: 0 })
    this.#store = store
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
    // Other requests run between pages, so no list of any size holds the event loop for long.
    await nextTurn()
    const page = await this.#store.page(this.#after, this.#pageCats, this.#chunkBytes)
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
