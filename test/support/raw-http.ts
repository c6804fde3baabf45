import { connect, type Socket } from 'node:net'

/** Raw HTTP/1.1 over a socket, for tests that need what a client library would hide (resets, partial bodies). */

const HOST = '127.0.0.1'

export interface HttpResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export interface Exchange {
  /** Every complete response read from the socket, in order. */
  responses: HttpResponse[]
  raw: string
  /** From connect until the socket closed. */
  closedAfterMs: number
  /** The socket error code seen by the client, if any (e.g. ECONNRESET). */
  error: string | undefined
  /** True when the client gave up (its safety cap) instead of the server closing. */
  timedOut: boolean
}

export interface Connection {
  socket: Socket
  closed: () => boolean
}

/** Parses back-to-back HTTP/1.1 responses with Content-Length bodies (all this server sends). */
export function parseResponses (raw: string): HttpResponse[] {
  const responses: HttpResponse[] = []
  let rest = raw
  for (let i = 0; i < 10 && rest.length > 0; i++) {
    const end = rest.indexOf('\r\n\r\n')
    if (end === -1) break
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n')
    const match = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine)
    if (match === null) break
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const length = Number(headers['content-length'] ?? '0')
    responses.push({ status: Number(match[1]), headers, body: rest.slice(end + 4, end + 4 + length) })
    rest = rest.slice(end + 4 + length)
  }
  return responses
}

/**
 * Opens a socket, lets `send` write to it, and collects everything until the
 * socket closes (or the client's safety cap destroys it, so nothing hangs).
 */
export function exchange (port: number, send: (connection: Connection) => Promise<void> | void, capMs: number): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect({ host: HOST, port })
    const chunks: Buffer[] = []
    let error: string | undefined
    let closed = false
    let timedOut = false
    let started = Date.now()
    const cap = setTimeout(() => {
      timedOut = true
      socket.destroy()
    }, capMs)
    socket.on('data', (chunk: Buffer) => { chunks.push(chunk) })
    socket.on('error', (err) => {
      error ??= 'code' in err && typeof err.code === 'string' ? err.code : err.message
    })
    socket.on('close', () => {
      closed = true
      clearTimeout(cap)
      const raw = Buffer.concat(chunks).toString('latin1')
      resolve({ responses: parseResponses(raw), raw, closedAfterMs: Date.now() - started, error, timedOut })
    })
    socket.once('connect', () => {
      started = Date.now()
      Promise.resolve(send({ socket, closed: () => closed })).catch((err: unknown) => {
        error ??= String(err)
        socket.destroy()
      })
    })
  })
}

/** The head of a request; `Connection: close` so that every exchange ends with the server closing. */
export function head (method: string, path: string, headers: Record<string, string | number> = {}): string {
  const all = { host: HOST, connection: 'close', ...headers }
  return [`${method} ${path} HTTP/1.1`, ...Object.entries(all).map(([name, value]) => `${name}: ${value}`)].join('\r\n') + '\r\n\r\n'
}

export function jsonHead (method: string, path: string, contentLength: number, headers: Record<string, string> = {}): string {
  return head(method, path, { 'content-type': 'application/json', 'content-length': contentLength, ...headers })
}

export function parseJson (response: HttpResponse): unknown {
  return response.body === '' ? undefined : JSON.parse(response.body)
}

/** The parsed body of the first response of an exchange; undefined when there was none. */
export function firstBody (result: Exchange): unknown {
  const [response] = result.responses
  return response === undefined ? undefined : parseJson(response)
}
