import t from 'tap'
import Fastify from 'fastify'
import { DependencyStatus } from '../src/dependency-status.js'
import { logCapture } from './support/app.js'

t.test('a probe that never answers is cut at the timeout; the outage and the recovery are logged once each', async (t) => {
  const { stream, text } = logCapture()
  let answer: () => Promise<void> = async () => new Promise<void>(() => {})
  const status = new DependencyStatus('store', Fastify({ logger: { stream } }).log, async () => answer())
  const started = Date.now()
  t.equal(await status.check(100), false)
  t.ok(Date.now() - started < 1000, 'bounded by the timeout')
  t.equal(await status.check(100), false)
  answer = async () => {}
  t.equal(await status.check(100), true)
  t.equal(await status.check(100), true)
  const lines = text().trim().split('\n').map((line) => JSON.parse(line))
  t.strictSame(lines.map((line) => line.msg), ['store unavailable', 'store available again'])
  t.equal(lines[0].reason, 'Error: no answer within 100 ms')
})
