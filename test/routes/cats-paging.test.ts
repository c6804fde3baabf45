import t from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { build } from '../support/app.js'
import { withObjects } from '../support/cat-objects.js'

const names = (body: string): string[] => JSON.parse(body).map((cat: { name: string }) => cat.name)

t.test('limit and after page through the list with a Link to the next page', async (t) => {
  const app = await build(t)
  for (let index = 0; index < 5; index++) await app.catsStore.createJson({ name: `c${index}`, age: index, breed: 'x' })
  const seen: string[] = []
  let url: string | undefined = '/cats?limit=2'
  let pages = 0
  while (url !== undefined) {
    const res: LightMyRequestResponse = await app.inject(url)
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /^application\/json/)
    seen.push(...names(res.body))
    pages++
    const link: string | string[] | number | undefined = res.headers.link
    if (link === undefined) {
      url = undefined
    } else {
      t.match(link, /^<\/cats\?limit=2&after=[A-Za-z0-9_-]+>; rel="next"$/)
      url = /^<([^>]+)>/.exec(String(link))?.[1]
    }
  }
  t.strictSame(seen, ['c0', 'c1', 'c2', 'c3', 'c4'])
  t.equal(pages, 3, 'no Link on the last page')
  const last = await app.inject('/cats?limit=5')
  t.equal(last.headers.link, undefined, 'a page that ends the list has no Link')
  t.equal(names(last.body).length, 5)
})

t.test('after alone pages with the largest page size', async (t) => {
  const app = await build(t)
  for (let index = 0; index < 1001; index++) await app.catsStore.createJson({ name: `c${index}`, age: index, breed: 'x' })
  const first = await app.inject('/cats?limit=1')
  const after = /after=([^>]+)>/.exec(String(first.headers.link))?.[1]
  const res = await app.inject(`/cats?after=${after}`)
  t.equal(names(res.body).length, 1000)
  t.equal(res.headers.link, undefined)
})

t.test('a bad limit or after is a 400 in the validation shape', async (t) => {
  const app = await build(t)
  for (const [query, field] of [['limit=0', 'querystring.limit'], ['limit=1001', 'querystring.limit'], ['limit=x', 'querystring.limit'], ['limit=1.5', 'querystring.limit'], ['limit=1e400', 'querystring.limit'], ['limit=Infinity', 'querystring.limit'], ['limit=-Infinity', 'querystring.limit'], ['after=', 'querystring.after'], ['after=abc', 'querystring.after'], ['limit=2&after=MA', 'querystring.after']]) {
    const res = await app.inject(`/cats?${query}`)
    t.equal(res.statusCode, 400, query)
    t.equal(res.json().code, 'FST_ERR_VALIDATION', query)
    t.strictSame(res.json().validation.map((issue: { field: string }) => issue.field), [field], query)
  }
})

t.test('the whole list of more than one page is streamed as one JSON array', async (t) => {
  const app = await build(t)
  for (let index = 0; index < 2500; index++) await app.catsStore.createJson({ name: `c${index}`, age: index, breed: 'x' })
  const res = await app.inject('/cats')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(res.body, JSON.stringify(await withObjects(app.catsStore).list()))
})
