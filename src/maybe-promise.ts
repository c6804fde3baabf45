/** A value, or a promise of it: what a synchronous store or check answers when it can. */
export type MaybePromise<T> = T | Promise<T>

/**
 * `next` applied to a value: at once when it is there, else when its promise resolves; `next` may
 * itself answer with a promise. Code built on it stays synchronous while its inputs are (the memory
 * stores), which spares each request the microtasks of an async function and an await.
 */
export function mapMaybePromise<T, R> (value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value)
}
