import { text } from 'node:stream/consumers'
import t from 'tap'
import { MemoryCatsStore } from '../../src/cats/memory-cats-store.js'
import { decodeCursor, encodeCursor, wholeListJson } from '../../src/cats/list-paging.js'

const fill = (store: MemoryCatsStore, count: number): void => {
  for (let index = 0; index < count; index++) store.create({ name: `cat ${index}`, age: index, breed: 'x' })
}

t.test('a list that fits one page is one string; a longer one a stream of the same JSON', async (t) => {
  const store = new MemoryCatsStore()
  fill(store, 3)
  t.equal(await wholeListJson(store, 3), JSON.stringify(store.list()))
  fill(store, 4)
  const streamed = await wholeListJson(store, 3)
  t.type(streamed, 'object', 'seven cats in pages of three are streamed')
  t.equal(await text(streamed as AsyncIterable<string>), JSON.stringify(store.list()))
})

t.test('cats removed while the list streams are left out, even a whole page of them', async (t) => {
  const store = new MemoryCatsStore()
  fill(store, 6)
  const streamed = await wholeListJson(store, 2)
  // The first page is read; cats 3 and 4 (the whole second page: cat 2 and cat 3) go before the stream reads on.
  store.remove(3)
  store.remove(4)
  const json = await text(streamed as AsyncIterable<string>)
  t.strictSame(JSON.parse(json).map((cat: { name: string }) => cat.name), ['cat 0', 'cat 1', 'cat 4', 'cat 5'])
})

t.test('cursors name a position and only those this service made are accepted', async (t) => {
  for (const position of [1, 42, 999_999_999_999_999]) t.equal(decodeCursor(encodeCursor(position)), position)
  t.not(encodeCursor(7), '7', 'opaque: not the position as it is')
  for (const bad of ['', 'x', encodeCursor(1) + '=', Buffer.from('0').toString('base64url'), Buffer.from('-1').toString('base64url'), Buffer.from('1e3').toString('base64url'), Buffer.from('1234567890123456').toString('base64url')]) {
    t.equal(decodeCursor(bad), undefined, `rejects ${JSON.stringify(bad)}`)
  }
})
