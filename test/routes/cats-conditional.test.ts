import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, bearer, tokenFor } from '../support/app.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'
import type { ConfigInput } from '../../src/config.js'

// Conditional requests (ETag, If-None-Match, If-Match; RFC 9110) through the routes, on the in-memory store and on PostgreSQL when CI has it.

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const json = { 'content-type': 'application/json' }
const mergePatch = { 'content-type': 'application/merge-patch+json' }

type Open = (t: Test, config?: Partial<ConfigInput>) => Promise<FastifyInstance>

function suite (t: Test, open: Open): void {
  t.test('GET, PUT and PATCH answer an ETag; If-None-Match with it gets 304 and no body', async (t) => {
    const app = await open(t)
    await app.inject({ method: 'POST', url: '/cats', headers: json, payload: tom })
    const read = await app.inject('/cats/1')
    const etag = String(read.headers.etag)
    t.match(etag, /^"[^"]+"$/, 'a strong tag')
    t.equal((await app.inject('/cats/1')).headers.etag, etag, 'the same while the cat is unchanged')

    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const cached = await app.inject({ url: '/cats/1', headers: { 'if-none-match': ifNoneMatch } })
      t.equal(cached.statusCode, 304, ifNoneMatch)
      t.equal(cached.body, '', 'no body')
      t.equal(cached.headers.etag, etag, 'the ETag again')
      t.equal(cached.headers['content-length'], undefined, 'no length of a body that is not there')
    }
    const head = await app.inject({ method: 'HEAD', url: '/cats/1', headers: { 'if-none-match': etag } })
    t.equal(head.statusCode, 304, 'HEAD alike')
    t.equal((await app.inject({ url: '/cats/1', headers: { 'if-none-match': '"other"' } })).statusCode, 200, 'another tag: the cat')
    t.equal((await app.inject({ url: '/cats/1', headers: { 'if-none-match': 'garbage' } })).statusCode, 200, 'no tag at all: the cat')

    const put = await app.inject({ method: 'PUT', url: '/cats/1', headers: json, payload: { toy: 'ball' } })
    t.equal(put.statusCode, 200)
    t.not(put.headers.etag, etag, 'a write gives a new ETag')
    const patch = await app.inject({ method: 'PATCH', url: '/cats/1', headers: mergePatch, payload: { toy: null } })
    t.equal(patch.statusCode, 200)
    t.not(patch.headers.etag, put.headers.etag)
    t.equal((await app.inject({ url: '/cats/1', headers: { 'if-none-match': etag } })).statusCode, 200, 'the first tag is stale: the cat')
    t.equal((await app.inject('/cats/1')).headers.etag, patch.headers.etag, 'a read answers the tag of the last write')

    const missing = await app.inject({ url: '/cats/9', headers: { 'if-none-match': '*' } })
    t.equal(missing.statusCode, 200, 'no cat: the empty 200, * matches nothing')
    t.equal(missing.body, '')
    t.equal(missing.headers.etag, undefined, 'and no ETag')
  })

  t.test('a stale If-Match gets 412 and changes nothing; the current one writes', async (t) => {
    const app = await open(t)
    await app.inject({ method: 'POST', url: '/cats', headers: json, payload: tom })
    const etag = String((await app.inject('/cats/1')).headers.etag)
    const first = await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...json, 'if-match': etag }, payload: { age: 4 } })
    t.equal(first.statusCode, 200, 'the current tag: written')
    t.equal(first.json().age, 4)

    const writes = [
      { method: 'PUT' as const, headers: json, payload: { age: 5 } },
      { method: 'PATCH' as const, headers: mergePatch, payload: { age: 5 } },
      { method: 'DELETE' as const, headers: {}, payload: undefined }
    ]
    for (const write of writes) {
      const stale = await app.inject({ method: write.method, url: '/cats/1', headers: { ...write.headers, 'if-match': etag }, payload: write.payload })
      t.equal(stale.statusCode, 412, `${write.method} with a stale tag`)
      t.equal(stale.json().code, 'CATS_ERR_PRECONDITION_FAILED')
      const weak = await app.inject({ method: write.method, url: '/cats/1', headers: { ...write.headers, 'if-match': `W/${first.headers.etag}` }, payload: write.payload })
      t.equal(weak.statusCode, 412, `${write.method} with the current tag as weak: strong comparison fails`)
    }
    t.equal((await app.inject('/cats/1')).json().age, 4, 'nothing changed')
    t.equal((await app.inject('/cats/1')).headers.etag, first.headers.etag)

    const patched = await app.inject({ method: 'PATCH', url: '/cats/1', headers: { ...mergePatch, 'if-match': `"x", ${first.headers.etag}` }, payload: { age: 6 } })
    t.equal(patched.statusCode, 200, 'one of the listed tags is current')
    const any = await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...json, 'if-match': '*' }, payload: { age: 7 } })
    t.equal(any.statusCode, 200, '* matches any cat')
    const removed = await app.inject({ method: 'DELETE', url: '/cats/1', headers: { 'if-match': String(any.headers.etag) } })
    t.strictSame(removed.json(), { deleted: true })
    t.equal((await app.inject('/cats/1')).body, '', 'deleted')

    for (const write of writes) {
      const none = await app.inject({ method: write.method, url: '/cats/1', headers: { ...write.headers, 'if-match': '*' }, payload: write.payload })
      t.equal(none.statusCode, 412, `${write.method} with If-Match and no cat: 412, not the empty 200`)
    }
    const withoutCondition = await app.inject({ method: 'PUT', url: '/cats/1', headers: json, payload: { age: 1 } })
    t.equal(withoutCondition.statusCode, 200, 'without If-Match, the empty 200 stays')
    t.equal(withoutCondition.body, '')
  })

  t.test('If-None-Match on a write and If-Match on a read hold as RFC 9110 says', async (t) => {
    const app = await open(t)
    const absent = await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...json, 'if-none-match': '*' }, payload: { age: 4 } })
    t.equal(absent.statusCode, 200, 'If-None-Match: * and no cat: the empty 200')
    t.equal(absent.body, '')
    await app.inject({ method: 'POST', url: '/cats', headers: json, payload: tom })
    const etag = String((await app.inject('/cats/1')).headers.etag)
    const present = await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...json, 'if-none-match': '*' }, payload: { age: 4 } })
    t.equal(present.statusCode, 412, 'If-None-Match: * and a cat: 412')
    t.equal((await app.inject({ method: 'PATCH', url: '/cats/1', headers: { ...mergePatch, 'if-none-match': `W/${etag}` }, payload: { age: 4 } })).statusCode, 412,
      'If-None-Match naming the current tag (weak comparison): 412')
    t.equal((await app.inject({ method: 'DELETE', url: '/cats/1', headers: { 'if-none-match': etag } })).statusCode, 412)
    t.equal((await app.inject('/cats/1')).json().age, 3, 'nothing changed')
    t.equal((await app.inject({ url: '/cats/1', headers: { 'if-match': '"stale"' } })).statusCode, 412, 'a read with a stale If-Match: 412')
    t.equal((await app.inject({ url: '/cats/1', headers: { 'if-match': etag } })).statusCode, 200, 'with the current one: the cat')
    t.equal((await app.inject({ url: '/cats/2', headers: { 'if-match': '*' } })).statusCode, 412, 'no cat: If-Match: * fails')
  })

  t.test('a list request that is refused carries no ETag and is never a 304', async (t) => {
    const app = await open(t)
    const tag = String((await app.inject('/cats')).headers.etag)
    const refused = await app.inject({ url: '/cats?after=zzzz', headers: { 'if-none-match': tag } })
    t.equal(refused.statusCode, 400)
    t.equal(refused.headers.etag, undefined)
  })

  t.test('an ETag never matches a new cat that took a deleted cat\'s id', async (t) => {
    const app = await open(t)
    await app.inject({ method: 'POST', url: '/cats', headers: json, payload: tom })
    const old = String((await app.inject('/cats/1')).headers.etag)
    await app.inject({ method: 'DELETE', url: '/cats/1' })
    await app.inject({ method: 'POST', url: '/cats', headers: json, payload: tom })
    const again = await app.inject('/cats/1')
    t.strictSame(again.json(), { id: 1, ...tom }, 'the same id and fields')
    t.not(again.headers.etag, old, 'another ETag')
    const put = await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...json, 'if-match': old }, payload: { age: 9 } })
    t.equal(put.statusCode, 412)
  })

  t.test('the list has a weak ETag that changes with any cat, and answers 304 while it holds', async (t) => {
    const app = await open(t)
    const empty = await app.inject('/cats')
    const tags = [String(empty.headers.etag)]
    t.match(tags[0], /^W\/"[^"]+"$/)
    const cached = await app.inject({ url: '/cats', headers: { 'if-none-match': tags[0] } })
    t.equal(cached.statusCode, 304)
    t.equal(cached.body, '')
    const paged = await app.inject({ url: '/cats?limit=1', headers: { 'if-none-match': tags[0] } })
    t.equal(paged.statusCode, 304, 'a page of an unchanged collection too')

    const changes = [
      { method: 'POST' as const, url: '/cats', headers: json, payload: tom },
      { method: 'PUT' as const, url: '/cats/1', headers: json, payload: { age: 4 } },
      { method: 'PATCH' as const, url: '/cats/1', headers: mergePatch, payload: { toy: 'ball' } },
      { method: 'DELETE' as const, url: '/cats/1', headers: {}, payload: undefined }
    ]
    for (const change of changes) {
      await app.inject(change)
      const list = await app.inject({ url: '/cats', headers: { 'if-none-match': tags.at(-1) ?? '' } })
      t.equal(list.statusCode, 200, `after ${change.method}, the list again`)
      t.notOk(tags.includes(String(list.headers.etag)), 'under a tag never used before')
      tags.push(String(list.headers.etag))
    }
    await app.inject({ method: 'DELETE', url: '/cats/1' })
    await app.inject({ method: 'PUT', url: '/cats/1', headers: json, payload: { age: 4 } })
    t.equal((await app.inject({ url: '/cats', headers: { 'if-none-match': tags.at(-1) ?? '' } })).statusCode, 304, 'writes that find no cat change nothing')
  })

  t.test('CATS_IF_MATCH=required: writes without If-Match get 428, with it they work', async (t) => {
    const app = await open(t, { CATS_IF_MATCH: 'required' })
    await app.inject({ method: 'POST', url: '/cats', headers: json, payload: tom })
    const requests = [
      { method: 'PUT' as const, headers: json, payload: { age: 4 } },
      { method: 'PATCH' as const, headers: mergePatch, payload: { age: 4 } },
      { method: 'DELETE' as const, headers: {}, payload: undefined }
    ]
    for (const request of requests) {
      const refused = await app.inject({ ...request, url: '/cats/1' })
      t.equal(refused.statusCode, 428, request.method)
      t.equal(refused.json().code, 'CATS_ERR_PRECONDITION_REQUIRED')
    }
    t.strictSame((await app.inject('/cats/1')).json(), { id: 1, ...tom }, 'nothing changed')
    let etag = String((await app.inject('/cats/1')).headers.etag)
    for (const request of requests) {
      const done = await app.inject({ ...request, url: '/cats/1', headers: { ...request.headers, 'if-match': etag } })
      t.equal(done.statusCode, 200, `${request.method} with If-Match`)
      etag = String(done.headers.etag)
    }
    t.equal((await app.inject({ method: 'POST', url: '/cats', headers: json, payload: tom })).statusCode, 201, 'creates need no If-Match')
    const document = (await app.inject('/docs/json')).json()
    const ifMatch = (method: string) => document.paths['/cats/{id}'][method].parameters.find((parameter: { name: string }) => parameter.name === 'if-match')
    t.strictSame(['put', 'patch', 'delete'].map((method) => ifMatch(method).required), [true, true, true], 'the document requires If-Match on writes')
    t.equal(ifMatch('get').required, false, 'and not on reads')
  })
}

t.test('in memory', async (t) => {
  suite(t, async (t, config = {}) => await build(t, config))
})

const { TEST_DATABASE_URL } = process.env
if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL conditional request tests were skipped')
} else {
  const databaseUrl = TEST_DATABASE_URL
  t.test('on PostgreSQL', async (t) => {
    suite(t, async (t, config = {}) => {
      const schema = await freshServerSchema(t, await adminClient(t, databaseUrl), 'cats_conditional')
      return await build(t, { DATABASE_URL: urlWithSchema(databaseUrl, schema), ...config })
    })
  })
}

t.test('with CATS_AUTH=required, the guard answers first: 401 before 412 or 428', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required', CATS_IF_MATCH: 'required' })
  t.equal((await app.inject({ method: 'PUT', url: '/cats/1', headers: json, payload: { age: 4 } })).statusCode, 401)
  const token = bearer(tokenFor(app))
  t.equal((await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...json, ...token }, payload: { age: 4 } })).statusCode, 428)
  t.equal((await app.inject({ method: 'PUT', url: '/cats/1', headers: { ...json, ...token, 'if-match': '"x"' }, payload: { age: 4 } })).statusCode, 412)
})
