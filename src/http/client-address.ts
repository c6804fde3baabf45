import { isIPv6 } from 'node:net'

/**
 * The request's client address, or '' when it has none: Fastify reads `request.ip` from the socket, so it is
 * undefined (whatever its type says) once a client that sent its request and left has had its socket closed.
 * A client that has gone is no error: it counts as the client '' and its session shows no address.
 */
export const addressOf = (request: { readonly ip: string | undefined }): string => request.ip ?? ''

/**
 * The address a client is counted by, for every limit per client (failed logins, idempotency keys).
 * An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, as a dual-stack socket reports an IPv4 peer) is that
 * IPv4 address, so one client is not two. Any other IPv6 address counts as its /64 (`2001:db8:0:1::/64`):
 * a host is commonly given a whole /64 and may send from any address in it, so counting per address
 * would give it billions of budgets. Anything else (IPv4, or no IP address at all) is kept as it is.
 */
export function clientAddress (ip: string): string {
  // A zone (fe80::1%eth0) names the local interface, not the client.
  const address = ip.split('%', 1)[0]
  if (!isIPv6(address)) return ip
  const groups = ipv6Groups(address)
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.')
  }
  return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`
}

/** The eight 16-bit groups of a valid IPv6 address, `::` expanded and a dotted IPv4 tail split in two. */
function ipv6Groups (address: string): number[] {
  const [head, tail] = address.split('::')
  const left = groupsOf(head)
  if (tail === undefined) return left
  const right = groupsOf(tail)
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right]
}

function groupsOf (part: string): number[] {
  if (part === '') return []
  return part.split(':').flatMap((group) => {
    if (!group.includes('.')) return [Number.parseInt(group, 16)]
    const [a, b, c, d] = group.split('.').map(Number)
    return [(a << 8) | b, (c << 8) | d]
  })
}
