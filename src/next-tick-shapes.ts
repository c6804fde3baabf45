import { createHook } from 'node:async_hooks'

/** What keepNextTickShapes() holds: queue entries of process.nextTick, for the life of the process. */
const kept: object[] = []

/**
 * Keeps `process.nextTick` on V8's fast path for the life of the process, by holding one of
 * its queue entries.
 *
 * Node builds each nextTick entry as an object literal whose first keys are computed (its
 * async-id symbols). V8 defines such keys through inline caches that remember the hidden
 * class (map) they saw, and it holds the intermediate classes of the literal only weakly. A
 * full garbage collection at a moment when no entry is alive, which is any idle moment such
 * as the end of start-up, frees them; the next entry gets new classes, the caches see a
 * second class and turn megamorphic for good, and from then on every nextTick defines three
 * of its properties in V8's C++ runtime instead of in optimized code. Node's streams call
 * nextTick several times per HTTP request, so a process in that state counts about a quarter
 * more machine instructions per small request. An entry that stays alive keeps its classes,
 * and with them the caches' one class.
 *
 * The entry is taken from the `init` callback of an async hook that is enabled only for the
 * nextTick made here (the one async resource it creates) and disabled in that callback, so no
 * hook runs afterwards. Returns the entry it keeps.
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
