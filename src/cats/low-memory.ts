/**
 * A safety net below the store's own limits: writes stop while the heap is
 * above a share of its limit, so the process does not run out of memory;
 * reads and deletes go on. `heapUsed` should be cheap (a periodic sample), as
 * it is read on every write.
 */
export function writesAllowed (heapLimitBytes: number, ratio: number, heapUsed: () => number): () => boolean {
  const budget = heapLimitBytes * ratio
  return () => heapUsed() <= budget
}
