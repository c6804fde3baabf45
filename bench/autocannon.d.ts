// The part of autocannon's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    interface Request { method?: string, path?: string, headers?: Record<string, string>, body?: string }
    interface Options {
      url: string
      connections?: number
      pipelining?: number
      /** Seconds; ignored when `amount` is set. */
      duration?: number
      amount?: number
      /** Seconds before a request counts as timed out. */
      timeout?: number
      /** Each connection cycles through these. */
      requests?: Request[]
    }
    interface Result {
      errors: number
      non2xx: number
      statusCodeStats: Record<string, { count: number }>
      /** Milliseconds. */
      latency: { p99: number }
      /** `total`: the responses received. */
      requests: { total: number }
    }
    type Instance = EventEmitter & PromiseLike<Result>
  }

  function autocannon (options: autocannon.Options): autocannon.Instance
  export = autocannon
}
