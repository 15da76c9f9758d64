// Property checks without a library: a seeded generator and `forAll`, which runs a check on many generated cases
// and, when one fails, says which case and seed (HAUL_TEST_SEED=<seed> runs the same cases again).

const startSeed = process.env.HAUL_TEST_SEED ? Number(process.env.HAUL_TEST_SEED) : Math.floor(Math.random() * 2 ** 32);
let state = startSeed >>> 0;

/** A number in [0, 1) from the seeded generator (mulberry32). */
export function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** A whole number in [low, high]. */
export function integer(low, high) {
  return low + Math.floor(random() * (high - low + 1));
}

/** One of `items`. */
export function oneOf(items) {
  return items[integer(0, items.length - 1)];
}

/** Runs `check` on `runs` values of `generate()`; a failure names the case and the seed. */
export function forAll(name, generate, check, runs = 300) {
  for (let i = 0; i < runs; i++) {
    const value = generate();
    try {
      check(value);
    } catch (error) {
      const shown = JSON.stringify(value, (key, v) => (v instanceof Set ? Array.from(v) : v));
      error.message = `${name}, case ${i} (HAUL_TEST_SEED=${startSeed}): ${shown && shown.slice(0, 2000)}\n${error.message}`;
      throw error;
    }
  }
}
