import t from 'tap'
import { addressOf, clientAddress } from '../../src/http/client-address.js'

t.test('IPv4 addresses are counted as they are', async (t) => {
  for (const ip of ['127.0.0.1', '203.0.113.7', '10.0.0.255']) t.equal(clientAddress(ip), ip)
})

t.test('IPv4-mapped IPv6 addresses count as the IPv4 address, in either notation', async (t) => {
  t.equal(clientAddress('::ffff:203.0.113.7'), '203.0.113.7')
  t.equal(clientAddress('::FFFF:127.0.0.1'), '127.0.0.1')
  t.equal(clientAddress('::ffff:cb00:7107'), '203.0.113.7', 'the hex form too')
  t.equal(clientAddress('0:0:0:0:0:ffff:c0a8:0101'), '192.168.1.1', 'written out in full')
})

t.test('other IPv6 addresses count per /64', async (t) => {
  t.equal(clientAddress('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), '2001:db8:1:2::/64')
  t.equal(clientAddress('2001:0db8:0001:0002::1'), '2001:db8:1:2::/64', 'leading zeros do not make another client')
  t.equal(clientAddress('2001:db8:1:2::ffff'), clientAddress('2001:db8:1:2:ffff::'), 'two addresses of one /64 are one client')
  t.not(clientAddress('2001:db8:1:2::1'), clientAddress('2001:db8:1:3::1'), 'two /64s are two clients')
  t.equal(clientAddress('2001:db8::'), '2001:db8:0:0::/64')
  t.equal(clientAddress('::1'), '0:0:0:0::/64')
  t.equal(clientAddress('64:ff9b::203.0.113.7'), '64:ff9b:0:0::/64', 'a dotted tail that is not IPv4-mapped')
  t.equal(clientAddress('::ffff:0:203.0.113.7'), '0:0:0:0::/64', 'IPv4-translated is not IPv4-mapped')
  t.equal(clientAddress('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone is not part of the client')
})

t.test('anything that is no IP address is kept as it is', async (t) => {
  for (const value of ['', 'unknown', 'localhost', '1.2.3', '2001:db8::1::2']) t.equal(clientAddress(value), value)
})

t.test('a request without an address (its socket closed before it was handled) counts as the client \'\'', async (t) => {
  t.equal(addressOf({ ip: undefined }), '')
  t.equal(addressOf({ ip: '203.0.113.7' }), '203.0.113.7')
  t.equal(clientAddress(addressOf({ ip: undefined })), '')
})
