import t from 'tap'
import { errorBody, shorten } from '../../src/http/error-body.js'
import { MAX_MESSAGE_CHARS } from '../../src/http/error-limits.js'

const body = (statusCode: number, message: string) => errorBody({ statusCode, code: 'TEST_CODE', message })

t.test('errorBody uses the HTTP reason phrase', async (t) => {
  t.strictSame(body(400, 'bad'), { statusCode: 400, error: 'Bad Request', message: 'bad', code: 'TEST_CODE' })
  t.strictSame(body(401, 'who'), { statusCode: 401, error: 'Unauthorized', message: 'who', code: 'TEST_CODE' })
  t.strictSame(body(404, 'gone'), { statusCode: 404, error: 'Not Found', message: 'gone', code: 'TEST_CODE' })
  t.strictSame(body(413, 'big'), { statusCode: 413, error: 'Payload Too Large', message: 'big', code: 'TEST_CODE' })
  t.strictSame(body(415, 'type'), { statusCode: 415, error: 'Unsupported Media Type', message: 'type', code: 'TEST_CODE' })
  t.strictSame(body(500, 'oops'), { statusCode: 500, error: 'Internal Server Error', message: 'oops', code: 'TEST_CODE' })
})

t.test('errorBody falls back to "Error" for an unknown status code', async (t) => {
  t.strictSame(body(599, 'odd'), { statusCode: 599, error: 'Error', message: 'odd', code: 'TEST_CODE' })
  t.strictSame(body(499, 'odd'), { statusCode: 499, error: 'Error', message: 'odd', code: 'TEST_CODE' })
})

t.test('errorBody adds the validation issues when given', async (t) => {
  const validation = [{ field: 'body.age', message: 'must be integer' }]
  t.strictSame(errorBody({ statusCode: 400, code: 'FST_ERR_VALIDATION', message: 'm' }, validation),
    { statusCode: 400, error: 'Bad Request', message: 'm', code: 'FST_ERR_VALIDATION', validation })
})

t.test('shorten keeps a text within the limit as it is', async (t) => {
  t.equal(shorten('', 10), '')
  t.equal(shorten('abcdefghij', 10), 'abcdefghij', 'exactly the limit')
})

t.test('shorten keeps the start and the end of a longer text around an ellipsis, within the limit', async (t) => {
  t.equal(shorten('abcdefghijk', 10), 'abcde…hijk')
  t.equal(shorten('abcdefghijk', 9), 'abcd…hijk')
  const long = `start-${'x'.repeat(10_000)}-end`
  const short = shorten(long, 100)
  t.equal(short.length, 100)
  t.ok(short.startsWith('start-x') && short.endsWith('x-end'))
})

t.test('shorten never splits a character made of two UTF-16 units', async (t) => {
  const cat = '\u{1F408}' // two units: a high then a low surrogate
  // Cut at 10: the head ends after 5 units, the tail starts 4 units before the end.
  const headSplit = shorten(`abcd${cat}${'y'.repeat(10)}`, 10)
  t.equal(headSplit, 'abcd…yyyy', 'the pair across the head\'s end is left out whole')
  const tailSplit = shorten(`${'y'.repeat(10)}${cat}abc`, 10)
  t.equal(tailSplit, 'yyyyy…abc', 'the pair across the tail\'s start is left out whole')
  const kept = shorten(`abc${cat}${'y'.repeat(10)}`, 10)
  t.equal(kept, `abc${cat}…yyyy`, 'a pair wholly inside the head is kept')
  for (const text of [headSplit, tailSplit, kept]) {
    t.doesNotThrow(() => encodeURIComponent(text), 'no lone surrogate (encodeURIComponent throws on one)')
    t.ok(text.length <= 10)
  }
})

t.test('errorBody shortens a long message to MAX_MESSAGE_CHARS, whatever its error', async (t) => {
  const url = `/${'a'.repeat(20_000)}?q=1`
  const reply = body(404, `Route GET ${url} not found`)
  t.equal(reply.message.length, MAX_MESSAGE_CHARS)
  t.ok(reply.message.startsWith('Route GET /aaa') && reply.message.endsWith('?q=1 not found'), 'both ends are kept')
  t.equal(body(400, 'x'.repeat(MAX_MESSAGE_CHARS)).message.length, MAX_MESSAGE_CHARS, 'a message at the limit is kept whole')
})
