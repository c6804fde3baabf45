import { IncomingMessage, ServerResponse, createServer, request } from 'node:http'
import { Socket } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { withObjects } from '../support/cat-objects.js'
import { MemoryCatsStore } from '../../src/cats/memory-cats-store.js'
import type { CatsPage, CatsStore } from '../../src/cats/cats-store.js'
import { CHUNK_BYTES, Lists, decodeCursor, encodeCursor, type ListAnswer, type ListQuery, type ListedStore, type ListSettings } from '../../src/cats/list-paging.js'

const fill = async (store: CatsStore, count: number, name = (index: number) => `cat ${index}`): Promise<void> => {
  for (let index = 0; index < count; index++) await store.createJson({ name: name(index), age: index, breed: 'x' })
}

const settings = (overrides: Partial<ListSettings> = {}): ListSettings => ({ maxStreams: 5, writeTimeoutMs: 30_000, ...overrides })

/** What a client of a server that answers every request with `lists.json(response)` receives. */
interface Received {
  status: number
  chunks: Buffer[]
  text: string
}

/**
 * A server whose every response is `lists.json`: a string is sent as it is, a stream piped, undefined a 503.
 * It listens on a Unix socket, whose kernel buffers (about 200 KB) are far smaller than TCP's, so a client
 * that stops reading stops the stream after a few hundred kilobytes.
 */
async function serve (t: Test, lists: Pick<Lists, 'json'>, before?: (response: ServerResponse) => Promise<void>, query: ListQuery = { after: 0 }): Promise<string> {
  const sent: Array<Promise<void>> = []
  const server = createServer((_request, response) => {
    sent.push((async () => {
      await before?.(response)
      const list = await lists.json(response, query)
      if (list === undefined) response.writeHead(503).end()
      else if (typeof list.body === 'string') response.end(list.body)
      else list.body.pipe(response)
    })())
  })
  // Not in t.testdir(): a socket's path must be short (108 bytes on Linux).
  const folder = await mkdtemp(join(tmpdir(), 'lists-'))
  const path = join(folder, 'http.sock')
  await new Promise<void>((resolve) => server.listen(path, resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await Promise.all(sent)
    await rm(folder, { recursive: true, force: true })
  })
  return path
}

/** GET / with its response as it arrives. */
const open = (socketPath: string): Promise<IncomingMessage> => new Promise((resolve, reject) => {
  request({ socketPath, agent: false }, resolve).on('error', reject).end()
})

/** GET / and read the whole answer. */
async function get (socketPath: string): Promise<Received> {
  const response = await open(socketPath)
  const chunks: Buffer[] = []
  for await (const chunk of response) chunks.push(chunk)
  return { status: response.statusCode ?? 0, chunks, text: Buffer.concat(chunks).toString() }
}

/** A response that no client will read: the stream lists.json gives for it is read by the test itself. */
const unsent = (): ServerResponse => new ServerResponse(new IncomingMessage(new Socket()))

async function streamOf (lists: Lists, query: ListQuery = { after: 0 }): Promise<Readable> {
  const list = await lists.json(unsent(), query)
  if (!(list?.body instanceof Readable)) throw new Error('a list that fits one chunk')
  return list.body
}

const readAll = async (stream: Readable): Promise<Buffer[]> => {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

t.test('a list that fits one chunk is one string; a longer one a stream of the same JSON in chunks of at most chunkBytes', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 3)
  const path = await serve(t, new Lists(store, settings({ chunkBytes: 200, pageCats: 3 })))
  t.equal((await get(path)).text, JSON.stringify(await store.list()), 'three cats fit one page and one chunk')

  await fill(store, 100)
  const received = await get(path)
  t.equal(received.status, 200)
  t.equal(received.text, JSON.stringify(await store.list()))
  t.ok(received.chunks.length > 10, `sent in ${received.chunks.length} chunks`)
})

t.test('chunks are cut by bytes: a cat larger than a chunk and texts of several bytes per character', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 6, (index) => index === 2 ? 'é'.repeat(300) : `😺 ${index}`)
  const stream = await streamOf(new Lists(store, settings({ chunkBytes: 64, pageCats: 2 })))
  const chunks = await readAll(stream)
  t.equal(Buffer.concat(chunks).toString(), JSON.stringify(await store.list()), 'the bytes are the list, whatever the cuts')
  t.ok(chunks.every((chunk) => chunk.length <= 64), `no chunk is over 64 bytes: ${chunks.map((chunk) => chunk.length).join(', ')}`)
  t.ok(chunks.some((chunk) => chunk.toString().includes('\ufffd')), 'a character may be cut between chunks')
})

t.test('pages are bounded in bytes as well as in cats: the whole list is read a chunk at a time', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 50, (index) => 'x'.repeat(index % 2 === 0 ? 3000 : 10))
  const pages: number[] = []
  const counting: ListedStore = {
    pageEnd: store.pageEnd.bind(store),
    page: async (after: number, limit: number, maxBytes?: number): Promise<CatsPage> => {
      const page = await store.page(after, limit, maxBytes)
      pages.push(Buffer.byteLength(page.items))
      return page
    }
  }
  const chunks = await readAll(await streamOf(new Lists(counting, settings({ chunkBytes: 4096 }))))
  t.equal(Buffer.concat(chunks).toString(), JSON.stringify(await store.list()))
  t.ok(pages.every((bytes) => bytes <= 4096), `no page is over 4,096 bytes: ${pages.join(', ')}`)
  t.ok(chunks.every((chunk) => chunk.length <= 4096))
  t.equal(CHUNK_BYTES, 64 * 1024, 'the default chunk')
})

t.test('cats removed while the list streams are left out, even a whole page of them', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 6)
  const stream = await streamOf(new Lists(store, settings({ pageCats: 2 })))
  // The first page is read; cats 3 and 4 (the whole second page: cat 2 and cat 3) go before the stream reads on.
  await Promise.all([store.remove(3), store.remove(4)])
  const json = Buffer.concat(await readAll(stream)).toString()
  t.strictSame(JSON.parse(json).map((cat: { name: string }) => cat.name), ['cat 0', 'cat 1', 'cat 4', 'cat 5'])
})

t.test('a list whose last cats are removed while it streams still ends the array', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 4)
  const stream = await streamOf(new Lists(store, settings({ pageCats: 2 })))
  await Promise.all([store.remove(3), store.remove(4)])
  t.equal(Buffer.concat(await readAll(stream)).toString(), JSON.stringify(await store.list()))
})

t.test('a stream destroyed while it reads a page stops there', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 6)
  let pages = 0
  let secondPageAsked = (): void => {}
  const asked = new Promise<void>((resolve) => { secondPageAsked = resolve })
  let release = (): void => {}
  const slow: ListedStore = {
    pageEnd: store.pageEnd.bind(store),
    page: async (after: number, limit: number, maxBytes?: number): Promise<CatsPage> => {
      if (++pages > 1) {
        secondPageAsked()
        await new Promise<void>((resolve) => { release = resolve })
      }
      return store.page(after, limit, maxBytes)
    }
  }
  const stream = await streamOf(new Lists(slow, settings({ pageCats: 2 })))
  const received: Buffer[] = []
  stream.on('data', (chunk: Buffer) => received.push(chunk))
  await asked
  stream.destroy()
  release()
  await sleep(20)
  t.equal(Buffer.concat(received).toString(), JSON.stringify((await store.list()).slice(0, 2)).slice(0, -1), 'the first page, and nothing read after')
  t.equal(stream.destroyed, true)
})

t.test('a store that fails mid-stream ends the stream with its error', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 6)
  let pages = 0
  const failing: ListedStore = {
    pageEnd: store.pageEnd.bind(store),
    page: async (after: number, limit: number, maxBytes?: number): Promise<CatsPage> => {
      if (++pages > 1) throw new Error('the database is gone')
      return store.page(after, limit, maxBytes)
    }
  }
  await t.rejects(readAll(await streamOf(new Lists(failing, settings({ pageCats: 2 })))), /the database is gone/)
})

t.test('at most maxStreams lists stream at once; a place is free again when its response closes', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 10)
  const lists = new Lists(store, settings({ maxStreams: 1, pageCats: 2 }))
  const path = await serve(t, lists)
  const first = await open(path)
  t.equal(first.statusCode, 200)
  t.equal(lists.streams, 1)
  t.equal((await get(path)).status, 503, 'a second list while the first streams')
  const rest: Buffer[] = []
  for await (const chunk of first) rest.push(chunk)
  while (lists.streams > 0) await sleep(5)
  t.pass('the place is free once the first response closed')
  const again = await get(path)
  t.equal(again.status, 200)
  t.equal(again.text, JSON.stringify(await store.list()))
})

t.test('a response whose client left before its list is read takes no place and gets nothing', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 10)
  const lists = new Lists(store, settings({ pageCats: 2 }))
  const answers: Array<ListAnswer | undefined> = []
  const path = await serve(t, {
    json: async (response: ServerResponse, query: ListQuery) => {
      const answer = await lists.json(response, query)
      answers.push(answer)
      return answer
    }
  }, (response) => new Promise((resolve) => response.once('close', resolve)))
  const client = request({ socketPath: path, agent: false }).on('error', () => {})
  client.end()
  await sleep(50)
  client.destroy()
  while (answers.length === 0) await sleep(5)
  t.strictSame(answers, [{ body: '', last: 0, more: false }])
  t.equal(lists.streams, 0)
})

t.test('a reader that takes nothing for writeTimeoutMs has its response closed; one that reads slowly does not', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  // 2 MB: far more than the Unix socket's buffers hold.
  await fill(store, 2000, (index) => `cat ${index} ${'x'.repeat(1000)}`)
  const lists = new Lists(store, settings({ writeTimeoutMs: 1000, chunkBytes: 16 * 1024 }))
  const path = await serve(t, lists)

  const stalled = await open(path)
  stalled.pause()
  const started = Date.now()
  while (lists.streams > 0) await sleep(5)
  const elapsed = Date.now() - started
  t.ok(elapsed >= 950 && elapsed < 10_000, `the paused reader's response ended after about the timeout (${elapsed} ms), and its place is free`)
  // Reading again, the client gets what the socket held, then finds the response cut short.
  const outcome = await new Promise<string>((resolve) => {
    stalled.on('error', (error) => resolve(error.message))
    stalled.on('end', () => resolve('the whole list'))
    stalled.resume()
  })
  t.equal(outcome, 'aborted')

  // 50 ms between reads: slow, but the socket is never full for long (the client buffers a few reads' worth).
  const slow = await open(path)
  const chunks: Buffer[] = []
  for await (const chunk of slow) {
    chunks.push(chunk)
    if (chunks.length <= 8) await sleep(50)
  }
  t.equal(Buffer.concat(chunks).toString(), JSON.stringify(await store.list()), 'the slow reader got the whole list')
})

t.test('cursors name a position and only those this service made are accepted', async (t) => {
  for (const position of [1, 42, 999_999_999_999_999]) t.equal(decodeCursor(encodeCursor(position)), position)
  t.not(encodeCursor(7), '7', 'opaque: not the position as it is')
  for (const bad of ['', 'x', encodeCursor(1) + '=', Buffer.from('0').toString('base64url'), Buffer.from('-1').toString('base64url'), Buffer.from('1e3').toString('base64url'), Buffer.from('1234567890123456').toString('base64url')]) {
    t.equal(decodeCursor(bad), undefined, `rejects ${JSON.stringify(bad)}`)
  }
})

t.test('a page that fits one chunk is one string with where it ends; a larger one streams its first N cats', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 10)
  const whole = await store.list()
  const lists = new Lists(store, settings({ pageCats: 2 }))
  t.strictSame(await lists.json(unsent(), { after: 0, limit: 2 }), { body: JSON.stringify(whole.slice(0, 2)), last: 2, more: true }, 'one read holds the page')
  t.strictSame(await lists.json(unsent(), { after: 8, limit: 2 }), { body: JSON.stringify(whole.slice(8)), last: 10, more: false }, 'the last page')
  t.strictSame(await lists.json(unsent(), { after: 9, limit: 5 }), { body: JSON.stringify(whole.slice(9)), last: 10, more: false }, 'a short last page')

  const answer = await lists.json(unsent(), { after: 1, limit: 5 })
  t.equal(answer?.last, 6, 'the page ends at the fifth cat after the first')
  t.equal(answer?.more, true)
  t.equal(lists.streams, 1, 'a streamed page takes a place')
  if (!(answer?.body instanceof Readable)) throw new Error('a page of more than one read streams')
  t.equal(Buffer.concat(await readAll(answer.body)).toString(), JSON.stringify(whole.slice(1, 6)))

  const last = await lists.json(unsent(), { after: 4, limit: 10 })
  t.strictSame([last?.last, last?.more], [10, false], 'a streamed page that ends the list')
  if (!(last?.body instanceof Readable)) throw new Error('a page of more than one read streams')
  t.equal(Buffer.concat(await readAll(last.body)).toString(), JSON.stringify(whole.slice(4)))
})

t.test('a streamed page keeps the cats counted when it began: removed ones are left out, none created later is added', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 8)
  const answer = await streamOf(new Lists(store, settings({ pageCats: 2 })), { after: 0, limit: 5 })
  await Promise.all([store.remove(3), store.remove(5)])
  await fill(store, 3, (index) => `new ${index}`)
  const json = Buffer.concat(await readAll(answer)).toString()
  t.strictSame(JSON.parse(json).map((cat: { name: string }) => cat.name), ['cat 0', 'cat 1', 'cat 3'], 'cats 2 and 4 were removed; cat 5 follows the page')
})

t.test('a page is bounded in bytes like a whole list: a page of 1,000 large cats is read a chunk at a time', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 1200, () => 'x'.repeat(1000))
  const reads: number[] = []
  const counting: ListedStore = {
    pageEnd: store.pageEnd.bind(store),
    page: async (after: number, limit: number, maxBytes?: number, through?: number): Promise<CatsPage> => {
      const page = await store.page(after, limit, maxBytes, through)
      reads.push(Buffer.byteLength(page.items))
      return page
    }
  }
  const chunks = await readAll(await streamOf(new Lists(counting, settings({ chunkBytes: 16 * 1024 })), { after: 0, limit: 1000 }))
  t.equal(Buffer.concat(chunks).toString(), JSON.stringify((await store.list()).slice(0, 1000)))
  t.ok(reads.length > 50 && reads.every((bytes) => bytes <= 16 * 1024), `${reads.length} reads, none over 16 KiB`)
  t.ok(chunks.every((chunk) => chunk.length <= 16 * 1024))
})

t.test('a streamed page counts toward maxStreams', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  // A page of 1 MB: far more than the Unix socket's buffers hold, so the first one streams until its reader reads.
  await fill(store, 1000, (index) => `cat ${index} ${'x'.repeat(1000)}`)
  const lists = new Lists(store, settings({ maxStreams: 1, chunkBytes: 16 * 1024 }))
  const path = await serve(t, lists, undefined, { after: 0, limit: 1000 })
  const first = await open(path)
  t.equal(first.statusCode, 200)
  t.equal(lists.streams, 1)
  t.equal((await get(path)).status, 503, 'a second page while the first streams')
  first.destroy()
})

t.test('a list that fits one chunk is kept under its version: read again unchanged, the store is not read again', async (t) => {
  const store = withObjects(new MemoryCatsStore())
  await fill(store, 3)
  let reads = 0
  const counting: ListedStore = {
    pageEnd: store.pageEnd.bind(store),
    page: async (...args: Parameters<ListedStore['page']>): Promise<CatsPage> => {
      reads++
      return await store.page(...args)
    }
  }
  const lists = new Lists(counting, settings())
  const read = async (query: ListQuery): Promise<ListAnswer | undefined> => await lists.json(unsent(), { ...query, version: await store.listVersion() })
  const first = await read({ after: 0 })
  t.equal((await read({ after: 0 }))?.body, first?.body)
  t.equal(reads, 1, 'the same list, unchanged: kept')
  await read({ after: 0, limit: 2 })
  await read({ after: 1 })
  t.equal(reads, 3, 'another query is read')
  await fill(store, 1)
  t.equal((await read({ after: 1 }))?.body, JSON.stringify((await store.list()).slice(1)), 'a write changes the version: read again')
  t.equal(reads, 4)
  await lists.json(unsent(), { after: 1 })
  await lists.json(unsent(), { after: 1 })
  t.equal(reads, 6, 'without a version nothing is kept')
})
