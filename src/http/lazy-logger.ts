import type { FastifyBaseLogger } from 'fastify'

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
 * A logger that creates its pino logger only when a line is logged at an enabled level: Fastify makes a child
 * logger per request, and pino's child() serializes and redacts its bindings (measured: ~10% of a small request's
 * instructions) although most requests log nothing. A child of a lazy logger is lazy too.
 */
class LazyLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger
  readonly #bindings: ChildArguments[0] | undefined
  readonly #options: ChildArguments[1]
  #logger: FastifyBaseLogger | undefined

  constructor (parent: FastifyBaseLogger, bindings?: ChildArguments[0], options?: ChildArguments[1]) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  get level (): string {
    return this.#logger?.level ?? this.#options?.level ?? this.#parent.level
  }

  set level (level: string) {
    this.#created().level = level
  }

  #created (): FastifyBaseLogger {
    if (this.#logger === undefined) {
      const parent = this.#parent instanceof LazyLogger ? this.#parent.#created() : this.#parent
      this.#logger = this.#bindings === undefined ? parent : parent.child(this.#bindings, this.#options)
    }
    return this.#logger
  }

  #log (name: LevelName, args: unknown[]): void {
    if (!writesAt(this.level, name)) return
    const logger = this.#created()
    Reflect.apply(logger[name], logger, args)
  }

  fatal (...args: unknown[]): void { this.#log('fatal', args) }
  error (...args: unknown[]): void { this.#log('error', args) }
  warn (...args: unknown[]): void { this.#log('warn', args) }
  info (...args: unknown[]): void { this.#log('info', args) }
  debug (...args: unknown[]): void { this.#log('debug', args) }
  trace (...args: unknown[]): void { this.#log('trace', args) }
  silent (): void {}

  child (...[bindings, options]: ChildArguments): FastifyBaseLogger {
    return new LazyLogger(this, bindings, options)
  }
}

/** Serializers by the key of the logged object, as pino takes them. */
export type LogSerializers = Record<string, (value: never) => unknown>

/** Fastify's `loggerInstance`: `logger` made lazy, with `serializers` over Fastify's own. */
export function lazyLogger (logger: FastifyBaseLogger, serializers: LogSerializers = {}): FastifyBaseLogger & { serializers: LogSerializers } {
  return Object.assign(new LazyLogger(logger), { serializers })
}
