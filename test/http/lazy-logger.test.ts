import t from 'tap'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { lazyLogger, writesAt } from '../../src/http/lazy-logger.js'
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

// A request's logger, as Fastify derives it from its app logger.
const create = (parent: FastifyBaseLogger, options: { level?: string } = {}): FastifyBaseLogger =>
  lazyLogger(parent).child({ reqId: 'r1' }, options)

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

t.test('the logger itself logs through its parent, creating no child', async (t) => {
  const { logger, children, lines } = recordingLogger('info')
  const log = lazyLogger(logger)
  t.equal(log.level, 'info')
  log.info('i')
  log.debug('dropped')
  t.strictSame(children, [])
  t.strictSame(lines, [['info', {}, 'i']])
})

t.test('as Fastify\'s logger instance: a request that logs nothing creates no logger', async (t) => {
  const { logger, children } = recordingLogger('warn')
  const app = Fastify({ loggerInstance: lazyLogger(logger) })
  app.get('/', async () => 'ok')
  t.teardown(() => app.close())
  t.equal((await app.inject('/')).statusCode, 200)
  t.strictSame(children, [])
})

t.test('as Fastify\'s logger instance with pino: the lines carry the request id, through the given serializers', async (t) => {
  const { stream, text } = logCapture()
  const serializers = { req: (request: { url: string }) => ({ path: request.url }) }
  const app = Fastify({ loggerInstance: lazyLogger(pino({ level: 'info' }, stream), serializers), genReqId: () => 'req-7' })
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
  t.strictSame(lines[0].req, { path: '/' }, 'the given req serializer, not Fastify\'s')
  t.strictSame(lines[2].res, { statusCode: 200 }, 'Fastify\'s own res serializer')
})
