import net, { type Server, type Socket } from 'node:net'

/**
 * A TCP proxy in front of a real server that a test can make misbehave:
 * `silent` holds every byte in both directions (connections stay open, nothing
 * answers), `cutWhen` drops a connection when the client sends a chosen
 * message, `stop()` refuses new connections and drops the open ones, and
 * `start()` brings it back on the same port. `watch` sees what clients send.
 */
export class TcpProxy {
  readonly #targetHost: string
  readonly #targetPort: number
  readonly #sockets = new Set<Socket>()
  #server: Server | undefined
  port = 0
  silent = false
  /** When this returns true for a chunk from the client, the connection is cut instead of forwarding it. */
  cutWhen: ((chunk: Buffer) => boolean) | undefined
  /** Sees every chunk a client sends, with the client's socket to tell connections apart. */
  watch: ((chunk: Buffer, client: Socket) => void) | undefined

  constructor (target: URL) {
    this.#targetHost = target.hostname
    this.#targetPort = Number(target.port)
  }

  get openSockets (): number {
    return this.#sockets.size
  }

  /** The target URL with this proxy's address instead. */
  url (target: URL): string {
    const url = new URL(target.href)
    url.hostname = '127.0.0.1'
    url.port = String(this.port)
    return url.href
  }

  async start (): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.#targetPort, this.#targetHost)
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket)
        socket.on('error', () => {})
        socket.on('close', () => {
          this.#sockets.delete(socket)
          client.destroy()
          upstream.destroy()
        })
      }
      upstream.on('data', (chunk: Buffer) => { if (!this.silent) client.write(chunk) })
      client.on('data', (chunk: Buffer) => {
        this.watch?.(chunk, client)
        if (this.cutWhen?.(chunk) === true) {
          client.destroy()
          upstream.destroy()
        } else if (!this.silent) {
          upstream.write(chunk)
        }
      })
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, '127.0.0.1', resolve)
    })
    const address = server.address()
    if (typeof address === 'object' && address !== null) this.port = address.port
    this.#server = server
  }

  /** Stops listening (connections are refused) and drops every open connection, both sides. */
  async stop (): Promise<void> {
    const server = this.#server
    this.#server = undefined
    if (server === undefined) return
    const closed = [...this.#sockets].map(async (socket) => new Promise<void>((resolve) => socket.once('close', () => resolve())))
    for (const socket of this.#sockets) socket.destroy()
    await Promise.all([...closed, new Promise<void>((resolve) => server.close(() => resolve()))])
  }
}
