import t from 'tap'
import { importOptionalPeer, MissingOptionalPeer } from '../src/optional-peer.js'

// The package test installs the service without its optional peers and sees these errors through a host;
// here the repository has them all, so a package that exists nowhere stands for a missing one.
const missing = 'cats-auth-service-no-such-package'

t.test('an installed peer is imported', async (t) => {
  const pg = await importOptionalPeer('pg', 'DATABASE_URL is set', () => import('pg'))
  t.equal(typeof pg.default.Pool, 'function')
})

t.test('a peer that is not installed stops the start with the setting that needs it and what to install', async (t) => {
  const specifier: string = missing
  const error = await importOptionalPeer(missing, 'DATABASE_URL is set', (): Promise<unknown> => import(specifier)).catch((error: unknown) => error)
  // The standalone server logs this error without its stack.
  t.ok(error instanceof MissingOptionalPeer, 'a MissingOptionalPeer')
  t.match(error, {
    message: `DATABASE_URL is set, so the ${missing} package is required: npm install ${missing}`,
    // The resolution error is kept as the cause (its code may not survive the module hooks' thread under tap).
    cause: { message: new RegExp(`Cannot find package '${missing}'`) }
  })
})

t.test('a peer of which only one version will do is installed by that version', async (t) => {
  const specifier: string = missing
  await t.rejects(importOptionalPeer(missing, 'DATABASE_URL is a pglite:// URL', (): Promise<unknown> => import(specifier), `${missing}@1.2.3`), {
    message: `DATABASE_URL is a pglite:// URL, so the ${missing} package is required: npm install ${missing}@1.2.3`
  })
})

t.test('an installed peer that fails to load for another reason fails with its own error', async (t) => {
  // A path pg does not export: the package is there, so this is not a missing install.
  const specifier: string = 'pg/no-such-entry'
  const error = await importOptionalPeer('pg', 'DATABASE_URL is set', (): Promise<unknown> => import(specifier)).catch((error: unknown) => error)
  t.notOk(error instanceof MissingOptionalPeer, 'not a missing install')
  // Node's own error about the subpath (its code may not survive the module hooks' thread under tap).
  t.match(error, { message: /no-such-entry/ })
})
