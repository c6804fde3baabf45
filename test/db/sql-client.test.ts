import t, { type Test } from 'tap'
import { trace } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node'
import { recordSpans } from '../support/span-recorder.js'
import { pgliteClient, postgresClient, type SqlClient } from '../../src/db/sql-client.js'
import { pgliteCopy } from '../support/pglite-template.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

// The spans of the SQL clients: one per statement, transaction and probe made in a traced request, alike for
// PostgreSQL and PGlite; statement texts with their placeholders, never the parameters.

const exporter = recordSpans(t)
const host = trace.getTracer('host')

const PARAMETER = 'parameter-value-never-recorded'

/** The spans `work` makes inside a request span, and that request span's id. */
async function inRequest (work: () => Promise<unknown>): Promise<{ spans: ReadableSpan[], requestId: string }> {
  exporter.reset()
  const requestId = await host.startActiveSpan('request', async (request) => {
    try {
      await work()
    } finally {
      request.end()
    }
    return request.spanContext().spanId
  })
  return { spans: exporter.getFinishedSpans().filter(({ name }) => name !== 'request'), requestId }
}

function spansOf (t: Test, open: (t: Test) => Promise<SqlClient>): void {
  t.test('a statement: named for its first word, with its text; the parameters are not recorded', async (t) => {
    const client = await open(t)
    const { spans, requestId } = await inRequest(() => client.query('  select $1::text AS value', [PARAMETER]))
    t.equal(spans.length, 1)
    const [span] = spans
    t.equal(span.name, 'SELECT')
    t.equal(span.parentSpanContext?.spanId, requestId)
    t.strictSame(span.attributes, { 'db.system.name': 'postgresql', 'db.operation.name': 'SELECT', 'db.query.text': 'select $1::text AS value' })
  })

  t.test('a statement that does not start with a word (a comment first) is named SQL', async (t) => {
    const client = await open(t)
    const { spans } = await inRequest(() => client.query('/* probe */ SELECT 1'))
    t.strictSame(spans.map(({ name, attributes }) => [name, attributes['db.operation.name']]), [['SQL', 'SQL']])
  })

  t.test('a named statement: named for its name, which is also its summary', async (t) => {
    const client = await open(t)
    const { spans } = await inRequest(() => client.query({ name: 'value_of', text: 'SELECT $1::text AS value' }, [PARAMETER]))
    t.strictSame(spans.map(({ name, attributes }) => [name, attributes['db.query.summary'], attributes['db.query.text']]), [['value_of', 'value_of', 'SELECT $1::text AS value']])
  })

  t.test('a transaction: its span, the statements inside as its children', async (t) => {
    const client = await open(t)
    const { spans, requestId } = await inRequest(() => client.transaction(async (tx) => {
      await tx.query('CREATE TEMPORARY TABLE notes (text text)')
      await tx.query('INSERT INTO notes VALUES ($1)', [PARAMETER])
    }))
    const transaction = spans.find(({ name }) => name === 'transaction')
    t.equal(transaction?.parentSpanContext?.spanId, requestId)
    t.strictSame(spans.filter(({ parentSpanContext }) => parentSpanContext?.spanId === transaction?.spanContext().spanId).map(({ name }) => name), ['CREATE', 'INSERT'])
  })

  t.test('the readiness probe', async (t) => {
    const client = await open(t)
    const { spans } = await inRequest(() => client.ping(1000))
    t.strictSame(spans.map(({ name, attributes }) => [name, attributes['db.query.text']]), [['SELECT', 'SELECT 1']])
  })

  t.test('a failed statement: error.type is its SQLSTATE', async (t) => {
    const client = await open(t)
    const { spans } = await inRequest(() => client.query('SELECT * FROM no_such_table WHERE x = $1', [PARAMETER]).catch(() => undefined))
    t.strictSame(spans.map(({ attributes }) => attributes['error.type']), ['42P01'])
  })

  t.test('outside a traced request nothing is recorded', async (t) => {
    const client = await open(t)
    exporter.reset()
    await client.transaction((tx) => tx.query('SELECT 1'))
    await client.query('SELECT 1')
    t.strictSame(exporter.getFinishedSpans(), [])
  })

  t.test('no span holds a parameter', async () => {
    const recorded = JSON.stringify(exporter.getFinishedSpans().map(({ name, attributes }) => ({ name, attributes })))
    t.notOk(recorded.includes(PARAMETER))
  })
}

const serverUrl = process.env.TEST_DATABASE_URL
if (serverUrl === undefined || serverUrl === '') {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL server runs were skipped')
} else {
  t.test('node-postgres to the PostgreSQL server at TEST_DATABASE_URL', async (t) => {
    const admin = await adminClient(t, serverUrl)
    const schema = await freshServerSchema(t, admin, 'spans')
    spansOf(t, async (t) => {
      const client = await postgresClient(urlWithSchema(serverUrl, schema))
      t.teardown(() => client.close())
      return client
    })
  })
}

t.test('PGlite in the process', async (t) => {
  const client = await pgliteClient(await pgliteCopy(t))
  t.teardown(() => client.close())
  spansOf(t, async () => client)
})
