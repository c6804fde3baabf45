/** A value, or a promise of it: what a synchronous store or check answers when it can. */
export type MaybePromise<T> = T | Promise<T>

/**
 * `next` applied to a value: at once when it is there, else when its promise resolves. Code built on it stays
 * synchronous while its inputs are (the memory stores): an async handler and hook with their awaits counted
 * 5-7% more instructions on GET /profile and GET /cats/:id.
 */
export function mapMaybePromise<T, R> (value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value)
}

/** Whether `value` is a thenable: what `await` treats as a promise, native or not. */
function isThenable<T> (value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && 'then' in value && typeof value.then === 'function'
}

/**
 * A host's answer (its validateToken or isRevoked) as a MaybePromise. Any thenable is a promise of
 * its answer, as `await` would take it, not only a native Promise: taken for the answer itself, a
 * thenable object would count as an identity, or as "revoked", whatever it resolves to.
 */
export function hostAnswer<T> (answer: T | PromiseLike<T>): MaybePromise<T> {
  return isThenable(answer) ? Promise.resolve(answer) : answer
}
