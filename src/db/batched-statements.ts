import DataLoader from 'dataloader'

export interface BatchOptions {
  /** The most items one statement takes; more go in the next one. */
  maxBatchSize: number
  /**
   * The most statements of this kind running at once. The items that arrive meanwhile wait and go together in
   * the next one: a database commits one batch of writes for the price of one (group commit). Unbounded when not given.
   */
  maxInFlight?: number
  /** The longest a batch waits for a running statement before it goes anyway, so a stalled database cannot hold it past its deadline. */
  maxWaitMs?: number
}

/**
 * Sends the items (reads or writes of single cats) that arrive in one turn of the event loop to `run` together, as
 * one statement: one round trip, one socket write and one read for all of them, which is most of what an item
 * costs the service on its own. Each item is sent after it arrived, so it sees every write answered before it.
 * `run` answers each item in the order given, an Error for an item that fails alone; when `run` fails, every item
 * of the batch fails with its error.
 */
export function batchedStatements<Item, Answer> (run: (items: readonly Item[]) => Promise<Array<Answer | Error>>, options: BatchOptions): DataLoader<Item, Answer> {
  const { maxBatchSize, maxInFlight = Infinity, maxWaitMs = 0 } = options
  // Batches sent and not yet answered, counted from the moment one is given its turn: several batches can be
  // formed in one turn of the event loop (more items than maxBatchSize), and only maxInFlight of them may go.
  let inFlight = 0
  const waiting = new Set<() => void>()
  const schedule = (send: () => void): void => {
    if (inFlight < maxInFlight) {
      inFlight++
      setImmediate(send)
      return
    }
    const go = (): void => {
      clearTimeout(timer)
      waiting.delete(go)
      inFlight++
      send()
    }
    const timer = setTimeout(go, maxWaitMs)
    waiting.add(go)
  }
  return new DataLoader(async (items) => {
    try {
      return await run(items)
    } finally {
      inFlight--
      // The batch that has waited longest goes next.
      waiting.values().next().value?.()
    }
  }, { cache: false, maxBatchSize, batchScheduleFn: schedule })
}
