// The part of autocannon's programmatic API that the benchmark uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
    }

    interface Options {
      url: string
      connections?: number
      pipelining?: number
      /** Seconds; ignored when `amount` is set. */
      duration?: number
      amount?: number
      method?: string
      headers?: Record<string, string>
      body?: string
      requests?: Request[]
      timeout?: number
      /** Milliseconds between samples; the run stops on the first sample after `duration`. */
      sampleInt?: number
    }

    interface Histogram {
      average: number
      mean: number
      stddev: number
      min: number
      max: number
      total: number
      p50: number
      p90: number
      p99: number
    }

    interface Result {
      /** Seconds, from before the connections' requests are built. */
      duration: number
      errors: number
      timeouts: number
      non2xx: number
      resets: number
      statusCodeStats: Record<string, { count: number }>
      /** Milliseconds. */
      latency: Histogram
      /** Per sample; `total` is the number of responses. */
      requests: Histogram & { sent: number }
      /** Bytes per sample; `total` is all bytes received. */
      throughput: Histogram
    }

    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop: () => void
    }
  }

  function autocannon (options: autocannon.Options): autocannon.Instance
  export = autocannon
}
