import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import Fastify, { type LightMyRequestResponse } from 'fastify'
import serviceApp from '../../src/app.js'
import { build, testConfig } from '../support/app.js'
import { withObjects } from '../support/cat-objects.js'
import { exchange, head, jsonHead } from '../support/raw-http.js'
import { encodeCursor } from '../../src/cats/list-paging.js'

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

t.test('a page larger than one chunk streams the first N cats, with its Link and ETag; a small page is sent at once', async (t) => {
  const app = await build(t)
  const name = 'x'.repeat(8000)
  for (let index = 0; index < 20; index++) await app.catsStore.createJson({ name: `${index} ${name}`, age: index, breed: 'x' })
  const whole = await withObjects(app.catsStore).list()
  const first = await app.inject('/cats?limit=15')
  t.equal(first.statusCode, 200)
  t.equal(first.headers['content-length'], undefined, 'streamed: 15 cats of 8 KB are more than a 64 KiB chunk')
  t.equal(first.body, JSON.stringify(whole.slice(0, 15)), 'the first 15 cats')
  t.equal(first.headers.link, `</cats?limit=15&after=${encodeCursor(15)}>; rel="next"`)
  const etag = String(first.headers.etag)
  t.equal((await app.inject({ url: '/cats?limit=15', headers: { 'if-none-match': etag } })).statusCode, 304, 'the ETag still answers 304')
  const rest = await app.inject(`/cats?limit=15&after=${encodeCursor(15)}`)
  t.equal(rest.body, JSON.stringify(whole.slice(15)))
  t.equal(rest.headers.link, undefined, 'the last page has no Link')
  const small = await app.inject('/cats?limit=2')
  t.equal(small.headers['content-length'], String(Buffer.byteLength(small.body)), 'a page that fits one chunk is one string')
  t.equal(small.headers.link, `</cats?limit=2&after=${encodeCursor(2)}>; rel="next"`)
})

/** The Link of GET `target` sent as it is over a raw socket (what a client library would normalise). */
async function linkOf (t: Test, port: number, target: string): Promise<string | undefined> {
  const result = await exchange(port, ({ socket }) => { socket.write(head('GET', target)) }, 5000)
  t.equal(result.responses[0]?.status, 200, target)
  return result.responses[0]?.headers.link
}

const hostileTargets = (prefix: string): string[] => [
  `${prefix}/cats#>;rel=prev,<https://evil.example/steal>;rel=next,<&limit=1`,
  `http://evil.example${prefix}/cats?limit=1`
]

t.test('the Link names the service\'s route, never the request target: a fragment or an absolute-form target chooses nothing', async (t) => {
  const app = await build(t)
  for (let index = 0; index < 3; index++) await app.catsStore.createJson({ name: `c${index}`, age: index, breed: 'x' })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  for (const target of hostileTargets('')) {
    const link = await linkOf(t, port, target)
    t.comment(`${target} → Link: ${link}`)
    t.equal(link, `</cats?limit=1&after=${encodeCursor(1)}>; rel="next"`, target)
  }
})

t.test('under a host\'s prefix, the Link is the prefixed route', async (t) => {
  const host = Fastify({ logger: false })
  await host.register(serviceApp, { prefix: '/api', config: testConfig })
  t.teardown(() => host.close())
  await host.listen({ host: '127.0.0.1', port: 0 })
  const { port } = host.server.address() as AddressInfo
  for (let index = 0; index < 3; index++) {
    const created = await exchange(port, ({ socket }) => {
      const body = JSON.stringify({ name: `c${index}`, age: index, breed: 'x' })
      socket.write(jsonHead('POST', '/api/cats', Buffer.byteLength(body)) + body)
    }, 5000)
    t.equal(created.responses[0]?.status, 201)
  }
  for (const target of [...hostileTargets('/api'), '/api/cats?limit=1']) {
    const link = await linkOf(t, port, target)
    t.comment(`${target} → Link: ${link}`)
    t.equal(link, `</api/cats?limit=1&after=${encodeCursor(1)}>; rel="next"`, target)
  }
})
