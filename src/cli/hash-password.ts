import { text } from 'node:stream/consumers'
import { hashPassword } from '../auth/login/password.js'

// Reads the password from standard input (never argv, which other users can see in ps).
const password = (await text(process.stdin)).replace(/\r?\n$/, '')
if (password.length === 0) {
  console.error('Usage: printf %s "$PASSWORD" | npm run -s hash-password')
  process.exit(1)
}
console.log(await hashPassword(password))
