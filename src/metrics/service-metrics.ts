import type { onResponseHookHandler } from 'fastify'
import { Counter, Gauge, Histogram } from 'prom-client'
import type { MetricsRegistry } from '../app-options.js'
import type { HashQueueEvents } from '../auth/login/hash-queue.js'
import type { SessionEvents } from '../auth/sessions/sessions.js'
import { CatTooLarge, CollectionFull, LoginLimiterUnavailable, StoreUnavailable } from '../errors.js'

/** How a login attempt ended, by the status it was answered with. */
export type LoginOutcome = 'success' | 'failure' | 'rate_limited' | 'unavailable' | 'invalid_request'

const LOGIN_OUTCOMES: Record<number, LoginOutcome> = { 200: 'success', 401: 'failure', 429: 'rate_limited', 503: 'unavailable' }

/** The outcome a login answered with this status counts as. */
export const loginOutcome = (statusCode: number): LoginOutcome => LOGIN_OUTCOMES[statusCode] ?? 'invalid_request'

/** The route label of requests that matched no route: one label, whatever their URL, so the series stay few. */
export const UNMATCHED_ROUTE = 'unmatched'

// From a cached read (well under a millisecond) to a slow password hash or a database timeout.
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

export interface ServiceMetricsOptions {
  /** The number of stored cats, read on each scrape. */
  countCats: () => number | Promise<number>
  /** How long a scrape waits for the count; past it the gauge reads NaN, so a scrape never hangs on the store. */
  countTimeoutMs?: number
}

/**
 * The service's own metrics, registered on the given registry. Every name starts
 * with `cats_api_`, so they sit beside a host's metrics in one registry.
 */
export class ServiceMetrics {
  readonly requestDuration: Histogram<'method' | 'route' | 'status_code'>
  readonly loginAttempts: Counter<'outcome'>
  readonly storeErrors: Counter<'error'>
  readonly dependencyErrors: Counter<'dependency'>
  /** Reports the password-hash queue to the metrics below; HashQueue calls these only when a login waits or is refused. */
  readonly hashQueue: HashQueueEvents
  /** Counts sessions started and ended (Sessions calls these). */
  readonly sessions: SessionEvents

  constructor (registry: MetricsRegistry, { countCats, countTimeoutMs = 1000 }: ServiceMetricsOptions) {
    // Each metric is created on no registry (prom-client's default is its global one), then added to the given one below.
    const registers: [] = []
    this.requestDuration = new Histogram({
      name: 'cats_api_http_request_duration_seconds',
      help: 'Time to answer a request, by method, route pattern and status (the _count is the number of requests)',
      labelNames: ['method', 'route', 'status_code'],
      buckets: DURATION_BUCKETS,
      registers
    })
    this.loginAttempts = new Counter({
      name: 'cats_api_login_attempts_total',
      help: 'Login attempts by outcome: success, failure (wrong credentials), rate_limited, unavailable (limiter store or hash queue), invalid_request',
      labelNames: ['outcome'],
      registers
    })
    this.storeErrors = new Counter({
      name: 'cats_api_store_errors_total',
      help: 'Errors of the cats store by kind: unavailable, collection_full, cat_too_large',
      labelNames: ['error'],
      registers
    })
    this.dependencyErrors = new Counter({
      name: 'cats_api_dependency_errors_total',
      help: 'Requests or scrapes that found a dependency unreachable or failing: database, redis (a scrape\'s shows in the next one)',
      labelNames: ['dependency'],
      registers
    })
    const dependencyErrors = this.dependencyErrors
    const stored = new Gauge({
      name: 'cats_api_cats_stored',
      help: 'Cats in the store, counted on each scrape (NaN when the store did not answer in time)',
      registers,
      async collect () {
        const count = await withTimeout(countCats, countTimeoutMs)
        if (count === undefined) dependencyErrors.inc({ dependency: 'database' })
        this.set(count ?? Number.NaN)
      }
    })
    const waiting = new Gauge({ name: 'cats_api_hash_queue_waiting', help: 'Logins waiting for a password hash', registers })
    const waits = new Histogram({
      name: 'cats_api_hash_queue_wait_seconds',
      help: 'Time a login waited for a password-hash slot (logins that did not wait are not observed)',
      buckets: DURATION_BUCKETS,
      registers
    })
    const refused = new Counter({ name: 'cats_api_hash_queue_refused_total', help: 'Logins refused because the hash queue was full', registers })
    const started = new Counter({ name: 'cats_api_sessions_started_total', help: 'Sessions started (successful logins)', registers })
    const ended = new Counter({
      name: 'cats_api_sessions_ended_total',
      help: 'Sessions ended by reason: logout, logout_others (scope others or global), owner (DELETE /auth/sessions/{id}), ' +
        'reuse (a rotated refresh token presented again), cap (SESSIONS_PER_USER_MAX), user_gone (at a refresh)',
      labelNames: ['reason'],
      registers
    })
    for (const metric of [this.requestDuration, this.loginAttempts, this.storeErrors, this.dependencyErrors, stored, waiting, waits, refused, started, ended]) {
      registry.registerMetric(metric)
    }
    this.sessions = {
      started: () => started.inc(),
      ended: (reason, count) => ended.inc({ reason }, count)
    }
    this.hashQueue = {
      enqueued: () => waiting.inc(),
      dequeued: (seconds) => {
        waiting.dec()
        waits.observe(seconds)
      },
      refused: () => refused.inc()
    }
  }

  /** Counts a request's error when it is a store error or a dependency outage; other errors show in the status label. */
  countError (error: Error): void {
    if (error instanceof StoreUnavailable) {
      this.storeErrors.inc({ error: 'unavailable' })
      this.dependencyErrors.inc({ dependency: 'database' })
    } else if (error instanceof CollectionFull) {
      this.storeErrors.inc({ error: 'collection_full' })
    } else if (error instanceof CatTooLarge) {
      this.storeErrors.inc({ error: 'cat_too_large' })
    } else if (error instanceof LoginLimiterUnavailable) {
      this.dependencyErrors.inc({ dependency: 'redis' })
    }
  }

  /**
   * An onResponse hook timing every request by method, route pattern and status. The pattern (`/cats/:id`),
   * never the URL, keeps the number of series bounded; a request no route matched has none.
   */
  readonly observeResponse: onResponseHookHandler = (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE
    this.requestDuration.observe({ method: request.method, route, status_code: reply.statusCode }, reply.elapsedTime / 1000)
    done()
  }

  /** An onResponse hook for the login route. */
  readonly countLogin: onResponseHookHandler = (_request, reply, done) => {
    this.loginAttempts.inc({ outcome: loginOutcome(reply.statusCode) })
    done()
  }
}

/** The count, or undefined when it failed or took longer than `ms`. */
async function withTimeout (count: () => number | Promise<number>, ms: number): Promise<number | undefined> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<undefined>((resolve) => { timer = setTimeout(resolve, ms, undefined) })
  const counted = Promise.resolve().then(count).catch(() => undefined)
  const result = await Promise.race([counted, timeout])
  clearTimeout(timer)
  return result
}
