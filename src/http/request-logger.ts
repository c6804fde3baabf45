import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

export type LevelName = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type ChildArguments = Parameters<FastifyBaseLogger['child']>

// pino's standard levels; a level name not listed here counts as "everything enabled".
const LEVEL_VALUES: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity }

/** Whether a logger at `level` writes lines of level `name`. */
export function writesAt (level: string, name: LevelName): boolean {
  const threshold = LEVEL_VALUES[level]
  return threshold === undefined || LEVEL_VALUES[name] >= threshold
}

/**
 * A request's logger that creates its child logger (bound to the request id)
 * only when a line is logged at an enabled level. pino's child() serializes and
 * redacts the bindings, a noticeable share of a small request, and at the usual
 * levels most requests log nothing.
 */
class LazyChildLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger
  readonly #bindings: ChildArguments[0]
  readonly #options: ChildArguments[1]
  #child: FastifyBaseLogger | undefined

  constructor (parent: FastifyBaseLogger, bindings: ChildArguments[0], options: ChildArguments[1]) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  get level (): string {
    return this.#child?.level ?? this.#options?.level ?? this.#parent.level
  }

  set level (level: string) {
    this.#logger().level = level
  }

  #logger (): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options)
    return this.#child
  }

  #log (name: LevelName, args: unknown[]): void {
    if (!writesAt(this.level, name)) return
    const logger = this.#logger()
    Reflect.apply(logger[name], logger, args)
  }

  fatal (...args: unknown[]): void { this.#log('fatal', args) }
  error (...args: unknown[]): void { this.#log('error', args) }
  warn (...args: unknown[]): void { this.#log('warn', args) }
  info (...args: unknown[]): void { this.#log('info', args) }
  debug (...args: unknown[]): void { this.#log('debug', args) }
  trace (...args: unknown[]): void { this.#log('trace', args) }
  silent (): void {}

  child (...args: ChildArguments): FastifyBaseLogger {
    return this.#logger().child(...args)
  }
}

/** Fastify's childLoggerFactory option: request loggers that cost nothing until they log. */
export const lazyChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new LazyChildLogger(logger, bindings, options)
