import type { Socket } from 'node:net'

const QUERY = 'Q'.charCodeAt(0)
const SYNC = 'S'.charCodeAt(0)

interface ClientStream {
  /** Bytes of a message not yet complete. */
  pending: Buffer
  /** Whether the start-up message has gone by. */
  started: boolean
}

/**
 * Counts the queries PostgreSQL clients send, read from the bytes they write
 * (pass `feed` as TcpProxy.watch). A simple query ('Q') and an extended-protocol
 * query, which ends with a Sync ('S'), are each answered by one ReadyForQuery,
 * and node-postgres waits for it before sending the next: the count is the
 * number of round trips. Connections without TLS, as on 127.0.0.1.
 */
export class PgQueryCounter {
  count = 0
  readonly #streams = new WeakMap<Socket, ClientStream>()

  readonly feed = (chunk: Buffer, client: Socket): void => {
    const stream = this.#streams.get(client) ?? { pending: Buffer.alloc(0), started: false }
    let pending = Buffer.concat([stream.pending, chunk])
    let started = stream.started
    for (;;) {
      // A message is a type byte and a length that counts itself; the start-up message has no type byte.
      const header = started ? 5 : 4
      const size = pending.length < header ? Infinity : started ? 1 + pending.readInt32BE(1) : pending.readInt32BE(0)
      if (pending.length < size) break
      if (started && (pending[0] === QUERY || pending[0] === SYNC)) this.count++
      started = true
      pending = pending.subarray(size)
    }
    this.#streams.set(client, { pending, started })
  }
}
