import { execFile } from 'node:child_process'
import { copyFile, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import Fastify from 'fastify'
import ts from 'typescript'
import openapiTS, { astToString } from 'openapi-typescript'
import serviceApp from '../../../src/app.js'
import { testConfig } from '../../support/app.js'
import { plainNode } from '../../support/server.js'

const root = join(import.meta.dirname, '..', '..', '..')
const clientSource = join(root, 'test', 'fixtures', 'consumer', 'client.ts')

const compilerOptions: ts.CompilerOptions = {
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  types: ['node'],
  // The client and its generated schema are checked in full; the declaration files they use
  // (Node's, openapi-fetch's) are not the subject here, and checking them costs seconds.
  skipLibCheck: true
}

// The declaration files, parsed once for both programs of this file.
const host = ts.createCompilerHost(compilerOptions)
const parsed = new Map<string, ts.SourceFile | undefined>()
const getSourceFile = host.getSourceFile.bind(host)
host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
  if (!fileName.endsWith('.d.ts')) return getSourceFile(fileName, languageVersion, onError, shouldCreate)
  if (!parsed.has(fileName)) parsed.set(fileName, getSourceFile(fileName, languageVersion, onError, shouldCreate))
  return parsed.get(fileName)
}

/** A strict program of `file` and what it imports. */
const programOf = (file: string): ts.Program => ts.createProgram([file], compilerOptions, host)

/** The compiler's diagnostics for a program, as text. */
const typeErrors = (program: ts.Program): string[] =>
  ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))

/** Every way the source steps around the type checker: casts, non-null assertions, `any`, ts directives. */
function escapes (source: string): string[] {
  const file = ts.createSourceFile('client.ts', source, ts.ScriptTarget.ES2022, true)
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    const isConstAssertion = ts.isAsExpression(node) && ts.isConstTypeReference(node.type)
    if ((ts.isAsExpression(node) && !isConstAssertion) || ts.isTypeAssertionExpression(node) ||
      ts.isNonNullExpression(node) || node.kind === ts.SyntaxKind.AnyKeyword) found.push(node.getText(file))
    ts.forEachChild(node, visit)
  }
  visit(file)
  return [...found, ...(source.match(/@ts-\w+/g) ?? [])]
}

t.test('a client generated from the live document type-checks strictly and works against the running service', async (t) => {
  const app = Fastify()
  await app.register(serviceApp, { config: { ...testConfig, CATS_AUTH: 'required' } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no TCP address')
  const baseUrl = `http://127.0.0.1:${address.port}`

  // The generated types and the client, in a folder of their own as a consumer project has them.
  const dir = t.testdir({ 'package.json': JSON.stringify({ type: 'module' }) })
  const generated = astToString(await openapiTS(new URL(`${baseUrl}/docs/json`)))
  await writeFile(join(dir, 'schema.ts'), generated)
  const client = join(dir, 'client.ts')
  await copyFile(clientSource, client)

  t.strictSame(escapes(await readFile(clientSource, 'utf8')), [], 'the client has no casts, non-null assertions, any or ts directives')
  t.match(generated, /getCat: \{/, 'operations are named')
  const program = programOf(client)
  t.strictSame(typeErrors(program), [], 'tsc --strict finds no error in the client')

  // The JavaScript of the program just checked, run by Node as a consumer runs its build (without tap's
  // process-info loader, which has nothing to record in it).
  const emitted = program.emit()
  t.strictSame([emitted.emitSkipped, emitted.diagnostics], [false, []], 'the client compiles')
  const [command, args] = plainNode(join(dir, 'client.js'))
  const { stdout } = await promisify(execFile)(command, [...args, baseUrl], { timeout: 60_000 })
  t.strictSame(JSON.parse(stdout), {
    profile: 'john',
    created: { id: 1, name: 'Tom' },
    listed: ['Tom'],
    read: 'Tom, 3, Siamese',
    updated: { age: 4, indoor: true },
    deleted: true,
    missing: 'no cat (200, text/plain; charset=utf-8)',
    invalid: { status: 400, code: 'FST_ERR_VALIDATION', fields: ['params.id'] },
    unauthorized: { status: 401, code: 'AUTH_ERR_MISSING_TOKEN' }
  })
})

t.test('the type check is real: a client that reads a field of the 200 without narrowing fails it', async (t) => {
  const app = Fastify()
  await app.register(serviceApp, { config: testConfig })
  t.teardown(() => app.close())
  const dir = t.testdir({ 'package.json': JSON.stringify({ type: 'module' }) })
  await writeFile(join(dir, 'schema.ts'), astToString(await openapiTS((await app.inject('/docs/json')).json())))
  const careless = join(dir, 'careless.ts')
  await writeFile(careless, [
    "import createClient from 'openapi-fetch'",
    "import type { paths } from './schema.js'",
    "const { data } = await createClient<paths>({ baseUrl: 'http://127.0.0.1' }).GET('/cats/{id}', { params: { path: { id: 1 } } })",
    'if (data !== undefined) console.log(data.id)',
    'export {}'
  ].join('\n'))
  t.match(typeErrors(programOf(careless)).join('\n'), /Property 'id' does not exist on type 'string'/)
})
