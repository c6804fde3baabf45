/** How long a readiness answer is reused, in milliseconds: a dependency going down shows within this and a probe's timeout. */
export const READINESS_CACHE_MS = 1000

/**
 * `probe` shared among its callers: while it runs, every caller gets the probe in flight, and
 * for `maxAgeMs` after it settles, its answer; only then does a caller start the next. A flood
 * of readiness requests then makes one probe of each dependency a second, not one per request,
 * and a dependency never has two probes of one process waiting on it.
 */
export function coalescedProbe<T> (probe: () => Promise<T>, maxAgeMs: number, now: () => number = () => performance.now()): () => Promise<T> {
  let latest: { answer: Promise<T>, settledAt: number | undefined } | undefined
  return () => {
    if (latest !== undefined && (latest.settledAt === undefined || now() - latest.settledAt < maxAgeMs)) return latest.answer
    const current: { answer: Promise<T>, settledAt: number | undefined } = { answer: probe(), settledAt: undefined }
    const settled = (): void => { current.settledAt = now() }
    current.answer.then(settled, settled)
    latest = current
    return current.answer
  }
}
