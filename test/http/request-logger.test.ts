import { IncomingMessage } from 'node:http'
import { Socket } from 'node:net'
import t from 'tap'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import { lazyChildLogger, writesAt } from '../../src/http/request-logger.js'
import { logCapture } from '../support/app.js'

type Bindings = Parameters<FastifyBaseLogger['child']>[0]

/** A parent logger that records the children it creates and the lines they log. */
function recordingLogger (level: string): { logger: FastifyBaseLogger, children: Bindings[], lines: unknown[][] } {
  const children: Bindings[] = []
  const lines: unknown[][] = []
  const make = (bindings: Bindings, ownLevel: string): FastifyBaseLogger => {
    const write = (name: string) => (...args: unknown[]) => { lines.push([name, bindings, ...args]) }
    return {
      level: ownLevel,
      fatal: write('fatal'),
      error: write('error'),
      warn: write('warn'),
      info: write('info'),
      debug: write('debug'),
      trace: write('trace'),
      silent: () => {},
      child (childBindings, options) {
        children.push(childBindings)
        return make({ ...bindings, ...childBindings }, options?.level ?? ownLevel)
      }
    }
  }
  return { logger: make({}, level), children, lines }
}

const server = Fastify()
const create = (parent: FastifyBaseLogger, options: { level?: string } = {}): FastifyBaseLogger =>
  lazyChildLogger.call(server, parent, { reqId: 'r1' }, options, new IncomingMessage(new Socket()))

t.test('writesAt: a level writes its own lines and those above it; an unknown level writes everything', async (t) => {
  t.ok(writesAt('info', 'info'))
  t.ok(writesAt('info', 'error'))
  t.notOk(writesAt('warn', 'info'))
  t.notOk(writesAt('silent', 'fatal'))
  t.ok(writesAt('custom', 'trace'))
})

t.test('no child logger is created while nothing is logged at an enabled level', async (t) => {
  const { logger, children, lines } = recordingLogger('warn')
  const log = create(logger)
  log.trace('a')
  log.debug('b')
  log.info({ req: 1 }, 'incoming request')
  log.silent('d')
  t.equal(log.level, 'warn', 'the parent level')
  t.strictSame(children, [])
  t.strictSame(lines, [])
})

t.test('enabled levels log through one child bound to the request id', async (t) => {
  const { logger, children, lines } = recordingLogger('warn')
  const log = create(logger)
  log.warn('w')
  log.error({ err: 'x' }, 'e')
  log.fatal('f')
  t.strictSame(children, [{ reqId: 'r1' }], 'created once')
  t.strictSame(lines, [
    ['warn', { reqId: 'r1' }, 'w'],
    ['error', { reqId: 'r1' }, { err: 'x' }, 'e'],
    ['fatal', { reqId: 'r1' }, 'f']
  ])
})

t.test('a route log level, a level change and an unknown level name are honoured', async (t) => {
  const route = recordingLogger('warn')
  const verbose = create(route.logger, { level: 'trace' })
  t.equal(verbose.level, 'trace')
  verbose.trace('t')
  t.strictSame(route.lines, [['trace', { reqId: 'r1' }, 't']])

  const changed = recordingLogger('info')
  const log = create(changed.logger)
  log.level = 'error'
  t.equal(log.level, 'error')
  log.warn('dropped')
  log.error('kept')
  t.strictSame(changed.lines, [['error', { reqId: 'r1' }, 'kept']])

  const custom = recordingLogger('audit')
  create(custom.logger).debug('d')
  t.strictSame(custom.lines, [['debug', { reqId: 'r1' }, 'd']], 'a custom level name leaves every line to the logger')
})

t.test('child() derives from the request child', async (t) => {
  const { logger, children, lines } = recordingLogger('info')
  create(logger).child({ part: 'db' }).info('i')
  t.strictSame(children, [{ reqId: 'r1' }, { part: 'db' }])
  t.strictSame(lines, [['info', { reqId: 'r1', part: 'db' }, 'i']])
})

t.test('with pino, the lines carry the request id', async (t) => {
  const { stream, text } = logCapture()
  const app = Fastify({ logger: { level: 'info', stream }, childLoggerFactory: lazyChildLogger, genReqId: () => 'req-7' })
  app.get('/', async (request) => {
    request.log.debug('not logged')
    request.log.info('handled')
    return 'ok'
  })
  t.teardown(() => app.close())
  await app.inject('/')
  const lines = text().trim().split('\n').map((line) => JSON.parse(line))
  t.strictSame(lines.map((line) => [line.reqId, line.msg]), [
    ['req-7', 'incoming request'], ['req-7', 'handled'], ['req-7', 'request completed']
  ])
})
