import type { CatsStore } from '../../src/cats/cats-store.js'

/**
 * Races 8 conditional writes (updates and patches) that name the cat's current version, `trials` times over,
 * on a store whose cat 1 exists. Returns the trials that did not end with one winner, seven 412s and the
 * winner's cat stored (test/cats/cats-store.contract.test.ts, and more trials in test:stress).
 */
export async function conditionalWriteRace (store: CatsStore, trials: number): Promise<number> {
  let bad = 0
  for (let trial = 0; trial < trials; trial++) {
    const version = (await store.find(1))?.version ?? ''
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, async (_, index) =>
      index % 2 === 0 ? await store.update(1, { winner: index }, { match: [version] }) : await store.patch(1, { winner: index }, { match: [version] })))
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled')
    const lost = outcomes.filter((outcome) => outcome.status === 'rejected' && (outcome.reason as { statusCode?: number }).statusCode === 412)
    if (won.length !== 1 || lost.length !== 7 || (await store.find(1))?.json !== won[0]?.value?.json) bad++
  }
  return bad
}
