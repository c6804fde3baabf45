import { createHook } from 'node:async_hooks'

/** What keepNextTickShapes() holds: queue entries of process.nextTick, for the life of the process. */
const kept: object[] = []

/**
 * Holds one process.nextTick queue entry for the life of the process: without a live entry, an idle full GC frees
 * the hidden classes of Node's entry literal (Node 24 after keeping them through two more) and V8's inline caches
 * for it turn megamorphic for good (measured: ~5% more instructions per request). The async hook that catches the
 * entry is enabled for this one nextTick only.
 */
export function keepNextTickShapes (): object | undefined {
  const hook = createHook({
    init (_asyncId, _type, _triggerAsyncId, resource) {
      kept.push(resource)
      hook.disable()
    }
  })
  hook.enable()
  process.nextTick(() => {})
  return kept.at(-1)
}
