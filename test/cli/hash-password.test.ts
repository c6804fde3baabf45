import t from 'tap'
import { verifyPassword } from '../../src/auth/login/password.js'
import { runCli } from '../support/cli.js'

t.test('hash-password reads standard input and prints a hash that verifies', async (t) => {
  const { code, stdout } = await runCli('hash-password.js', [], 'correct horse\n')
  t.equal(code, 0)
  const hash = stdout.trim()
  t.match(hash, /^\$scrypt\$ln=14,r=8,p=5\$/)
  t.ok(await verifyPassword('correct horse', hash), 'the trailing newline is not part of the password')
  t.notOk(await verifyPassword('wrong', hash))
  const empty = await runCli('hash-password.js', [], '')
  t.equal(empty.code, 1)
  t.match(empty.stderr, /Usage/)
})
