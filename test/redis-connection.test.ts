import t from 'tap'
import Fastify from 'fastify'
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node'
import { recordSpans } from './support/span-recorder.js'
import { connectRedis } from '../src/redis-connection.js'
import { freshKeyPrefix } from './support/redis.js'

// The spans of the service's Redis client: one per command sent in a traced request, named for the command,
// without its arguments.

const redisUrl = process.env.TEST_REDIS_URL
if (redisUrl === undefined || redisUrl === '') {
  t.comment('TEST_REDIS_URL is not set: the Redis span tests were skipped')
} else {
  const exporter = recordSpans(t)
  const { client } = await connectRedis(redisUrl, Fastify({ logger: false }).log)
  t.teardown(() => { client.disconnect() })
  const prefix = freshKeyPrefix(t, redisUrl)
  const VALUE = 'value-never-recorded'

  /** The spans `work` makes inside a request span, and that request span's id. */
  async function inRequest (work: () => Promise<unknown>): Promise<{ spans: ReadableSpan[], requestId: string }> {
    exporter.reset()
    const requestId = await trace.getTracer('host').startActiveSpan('request', async (request) => {
      await work()
      request.end()
      return request.spanContext().spanId
    })
    return { spans: exporter.getFinishedSpans().filter(({ name }) => name !== 'request'), requestId }
  }

  t.test('a command: a client span named for it, a child of the request, ended when its reply arrives', async (t) => {
    const { spans, requestId } = await inRequest(async () => {
      await client.set(`${prefix}key`, VALUE)
      t.equal(await client.get(`${prefix}key`), VALUE)
    })
    t.strictSame(spans.map(({ name, kind, attributes }) => ({ name, kind, attributes })), ['SET', 'GET'].map((name) => ({
      name, kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis', 'db.operation.name': name }
    })))
    t.ok(spans.every(({ parentSpanContext, status }) => parentSpanContext?.spanId === requestId && status.code === SpanStatusCode.UNSET))
  })

  t.test('transactions and scripts: each command they send', async (t) => {
    const { spans } = await inRequest(async () => {
      await client.multi().set(`${prefix}key`, VALUE, 'PX', 10_000).pexpire(`${prefix}key`, 20_000).exec()
      t.equal(await client.eval('return ARGV[1]', 1, `${prefix}key`, VALUE), VALUE)
    })
    t.strictSame(spans.map(({ name }) => name), ['MULTI', 'SET', 'PEXPIRE', 'EXEC', 'EVAL'])
  })

  t.test('a failed command: error status, error.type the reply error\'s class; no message', async (t) => {
    const { spans } = await inRequest(() => client.call('NO_SUCH_COMMAND', [VALUE]).catch(() => undefined))
    t.strictSame(spans.map(({ name, attributes, status }) => [name, attributes['error.type'], status]), [['NO_SUCH_COMMAND', 'ReplyError', { code: SpanStatusCode.ERROR }]])
  })

  t.test('outside a traced request (start-up, readiness between requests) nothing is recorded', async (t) => {
    exporter.reset()
    await client.ping()
    t.strictSame(exporter.getFinishedSpans(), [])
  })

  t.test('no span holds a key or a value', async (t) => {
    const { spans } = await inRequest(() => client.set(`${prefix}other`, VALUE))
    const recorded = JSON.stringify(spans.map(({ name, attributes }) => ({ name, attributes })))
    t.notOk(recorded.includes(VALUE) || recorded.includes(prefix))
  })
}
