// Writes what the original's pi-ai `calculateCost` makes of a set of usages
// (providers/tests/fixtures/cost.json): plain prices, price tiers by input size, and Anthropic's
// hour-long cache writes (`cacheWrite1h`), priced at twice the input price.
//
//   node scripts/gen-cost-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { calculateCost } = await original(piDir).bundled("calculateCost");

const opus = { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 };
const tiered = { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 1.625,
  tiers: [{ inputTokensAbove: 200000, input: 2.5, output: 15, cacheRead: 0.25, cacheWrite: 3.25 }] };
const usage = (input, output, cacheRead, cacheWrite, extra = {}) => ({ input, output, cacheRead,
  cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, ...extra,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
const cases = [
  { name: "plain", cost: opus, usage: usage(1000, 200, 3000, 400) },
  { name: "hour-long-writes", cost: opus, usage: usage(1000, 200, 3000, 400, { cacheWrite1h: 300 }) },
  { name: "only-hour-long-writes", cost: opus, usage: usage(7, 11, 0, 12345, { cacheWrite1h: 12345 }) },
  { name: "no-hour-long-writes", cost: opus, usage: usage(7, 11, 0, 12345, { cacheWrite1h: 0 }) },
  { name: "odd-counts", cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, usage: usage(1, 3, 7, 13, { cacheWrite1h: 11 }) },
  { name: "below-the-tier", cost: tiered, usage: usage(100000, 10, 50000, 50000, { cacheWrite1h: 10000 }) },
  { name: "above-the-tier", cost: tiered, usage: usage(100000, 10, 50000, 50001, { cacheWrite1h: 10000 }) },
];
for (const c of cases) {
  const model = { id: "m", cost: c.cost };
  const usage = structuredClone(c.usage);
  calculateCost(model, usage);
  c.expected = usage.cost;
}
fs.writeFileSync(out, JSON.stringify({ cases }, null, 1) + "\n");
console.log(`${cases.length} cases -> ${out}`);
