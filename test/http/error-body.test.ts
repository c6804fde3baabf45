import t from 'tap'
import { errorBody } from '../../src/http/error-body.js'

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
