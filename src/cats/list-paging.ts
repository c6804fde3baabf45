import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { CatsStore } from './cats-store.js'

/** Cats per page when the whole list is produced: small enough that a page takes well under a millisecond. */
export const LIST_CHUNK = 1000

/**
 * The whole list as JSON text. A list that fits one page is returned as one string; a longer one as a
 * stream that produces it page by page and lets other requests run between pages, so no list of any
 * size holds the event loop for long or is built whole in memory. Cats created while it streams are
 * included; a cat removed before its page is read is not.
 */
export async function wholeListJson (store: CatsStore, chunk = LIST_CHUNK): Promise<string | Readable> {
  const first = await store.page(0, chunk)
  if (!first.more) return `[${first.items}]`
  return Readable.from(rest(store, first.items, first.last, chunk), { objectMode: false })
}

async function * rest (store: CatsStore, items: string, last: number, chunk: number): AsyncGenerator<string> {
  yield `[${items}`
  for (let after = last, more = true; more;) {
    await nextTurn()
    const page = await store.page(after, chunk)
    if (page.items !== '') yield `,${page.items}`
    after = page.last
    more = page.more
  }
  yield ']'
}

const CURSOR_TEXT = /^[1-9][0-9]{0,14}$/

/** The opaque cursor a client passes as `after`: it names the position of the last cat it has seen. */
export const encodeCursor = (position: number): string => Buffer.from(String(position)).toString('base64url')

/** The position a cursor names, or undefined when it is not one this service made. */
export function decodeCursor (cursor: string): number | undefined {
  const text = Buffer.from(cursor, 'base64url').toString()
  return CURSOR_TEXT.test(text) && encodeCursor(Number(text)) === cursor ? Number(text) : undefined
}
