import t, { type Test } from 'tap'
import { existsSync } from 'node:fs'
import Fastify from 'fastify'
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core'
import serviceApp from '../../../src/app.js'
import { testConfig } from '../../support/app.js'
import { startServer } from '../../support/server.js'

// Debian's chromium package; .ci/run installs it when it is missing.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** A headless Chromium with no background traffic, shared by the journeys of this file. */
async function launchBrowser (): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync']
  })
}

/** A fresh profile of the shared browser (no cookies, storage or cache of another journey), closed on teardown. */
async function newContext (t: Test, browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext()
  // A step that cannot happen fails within seconds instead of waiting for tap's timeout.
  context.setDefaultTimeout(15_000)
  t.teardown(() => context.close())
  return context
}

/**
 * A page that records every console message, page error, failed request and CSP
 * violation (reported through the console too, with the refused sample).
 */
async function watchedPage (context: BrowserContext): Promise<{ page: Page, log: string[], problems: string[] }> {
  const page = await context.newPage()
  const log: string[] = []
  const problems: string[] = []
  // Runs in the page (as text: this project compiles without the DOM's types).
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) => {
      console.error('CSP violation: ' + event.violatedDirective + ' ' + event.sourceFile + ':' + event.lineNumber + ' ' + event.sample)
    })`
  })
  page.on('console', (message) => {
    const line = `console.${message.type()}: ${message.text()}`
    log.push(line)
    if (message.type() === 'error' || message.type() === 'warning') problems.push(line)
  })
  page.on('pageerror', (error) => { problems.push(`page error: ${error.message}`) })
  page.on('requestfailed', (request) => { problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`) })
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`)
  })
  return { page, log, problems }
}

/** The operation block of METHOD PATH in Swagger UI. */
function operation (page: Page, method: string, path: string): Locator {
  return page.locator(`.opblock.opblock-${method}`).filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) })
}

/** Expands an operation, presses "Try it out", optionally edits the body, executes it; returns status and body. */
async function tryItOut (op: Locator, body?: (text: string) => string): Promise<{ status: number, body: unknown, sent: string | undefined }> {
  await op.locator('.opblock-summary-control').click()
  await op.getByRole('button', { name: 'Try it out' }).click()
  let sent: string | undefined
  const textarea = op.locator('textarea.body-param__text')
  if (body !== undefined) {
    sent = await textarea.inputValue()
    const edited = body(sent)
    if (edited !== sent) await textarea.fill(edited)
  }
  await op.getByRole('button', { name: 'Execute' }).click()
  const live = op.locator('.live-responses-table tbody .response')
  const status = Number(await live.locator('.response-col_status').innerText())
  const text = await live.locator('.response-col_description pre.microlight').first().innerText()
  return { status, body: JSON.parse(text), sent }
}

/** A fresh page at DOCSPATH, which loads fully without a problem. */
async function loadDocs (t: Test, context: BrowserContext, base: string, docsPath: string): Promise<{ page: Page, log: string[], problems: string[] }> {
  const watched = await watchedPage(context)
  const { page, log, problems } = watched
  await page.goto(`${base}${docsPath}`, { waitUntil: 'load' })
  await page.locator('.opblock').first().waitFor()
  t.equal(await page.locator('.opblock').count(), 14, `${docsPath}: every operation is listed`)
  await page.waitForLoadState('networkidle')
  t.strictSame(problems, [], `${docsPath}: no console error, CSP violation or failed request while loading`)
  t.comment(`${docsPath} console log (${log.length} lines)${log.map((line) => `\n  ${line}`).join('')}`)
  return watched
}

/** The docs at PREFIX/docs/ and PREFIX/docs load fully; then, on the page of /docs, log in, authorize, read the profile and create a cat. */
async function driveDocs (t: Test, browser: Browser, base: string, prefix: string): Promise<void> {
  const context = await newContext(t, browser)
  await (await loadDocs(t, context, base, `${prefix}/docs/`)).page.close()
  // The session goes on from this load, so its problems count for the whole session too.
  const { page, log, problems } = await loadDocs(t, context, base, `${prefix}/docs`)

  const login = await tryItOut(operation(page, 'post', '/auth/login'), (text) => text)
  t.strictSame(JSON.parse(login.sent ?? ''), { username: 'john', password: 'changeme' }, 'Try it out is pre-filled with a working login')
  t.equal(login.status, 200, 'the pre-filled login succeeds')
  const token = typeof login.body === 'object' && login.body !== null && 'access_token' in login.body ? String(login.body.access_token) : ''
  t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'the login returns a token')

  await page.locator('.auth-wrapper button.authorize').click()
  const dialog = page.locator('.modal-ux')
  await dialog.locator('input[type="text"]').fill(token)
  await dialog.getByRole('button', { name: 'Apply credentials' }).click()
  await dialog.getByRole('button', { name: 'Close' }).click()

  const profile = await tryItOut(operation(page, 'get', '/profile'))
  t.strictSame([profile.status, profile.body], [200, { userId: 1, username: 'john' }], 'GET /profile with the authorized token')

  const created = await tryItOut(operation(page, 'post', '/cats'), () => '{ "name": "Tom", "age": 3, "breed": "Siamese" }')
  t.strictSame([created.status, created.body], [201, { id: 1, name: 'Tom', age: 3, breed: 'Siamese' }], 'POST /cats with the authorized token')

  t.strictSame(problems, [], 'no console error, CSP violation or failed request in the whole session')
  t.comment(`${prefix}/docs session console log (${log.length} lines)${log.map((line) => `\n  ${line}`).join('')}`)
}

if (!existsSync(CHROMIUM)) {
  t.comment(`SKIPPED: the docs browser test needs Chromium at ${CHROMIUM} (Debian package "chromium"; .ci/run installs it), which is not installed here`)
} else {
  const browser = await launchBrowser()
  t.teardown(() => browser.close())

  // CATS_AUTH=required: POST /cats succeeds only if Swagger UI sends the token it was given.
  t.test('standalone server: /docs and /docs/ work in a real browser, login → Authorize → profile → create', async (t) => {
    const server = await startServer({ CATS_AUTH: 'required' })
    t.teardown(() => { server.child.kill('SIGKILL') })
    await driveDocs(t, browser, server.base, '')
  })

  t.test('registered by a host under /api: /api/docs and /api/docs/ work in a real browser, same journey', async (t) => {
    const host = Fastify()
    await host.register(serviceApp, { prefix: '/api', config: { ...testConfig, CATS_AUTH: 'required' } })
    t.teardown(() => host.close())
    const base = await host.listen({ host: '127.0.0.1', port: 0 })
    await driveDocs(t, browser, base, '/api')
  })
}
