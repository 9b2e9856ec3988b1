// The search page's latency: the time from Enter in the search box to the first result on
// screen, in Debian's chromium driven by playwright-core, over `kbtools serve` of a bundle. Run
// through benches/page_latency.sh, which installs both (tests/web/setup.sh); measure a release
// build on a quiet machine. The browser test (tests/web/browser.mjs) checks that the results
// come, never how fast.
//
// Usage: node benches/page_latency.mjs [--binary PATH] [--bundle DIR] [--rounds N]
//   --binary  the kbtools to serve (default target/release/kbtools)
//   --bundle  the bundle (default SciFact of the shared evaluation data, ../shared/bundles/scifact)
//   --rounds  how many times the five questions are asked (default 5)
// Env: CHROMIUM (default /usr/bin/chromium), PLAYWRIGHT_CORE (the playwright-core folder).
//
// The server builds its index in a scratch folder before it listens (not timed); one untimed
// search warms the page and the server. Each timed search must show a first result with a
// title, or the run fails: a fast wrong answer is no figure. Prints each round's times, then
// the median, min and max over every search.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const { chromium } = createRequire(import.meta.url)(process.env.PLAYWRIGHT_CORE || "playwright-core");

const ROOT = resolve(new URL("..", import.meta.url).pathname);
const { values: args } = parseArgs({
  options: {
    binary: { type: "string", default: join(ROOT, "target", "release", "kbtools") },
    bundle: { type: "string", default: join(ROOT, "..", "shared", "bundles", "scifact") },
    rounds: { type: "string", default: "5" },
  },
});
const BIN = resolve(args.binary);
const BUNDLE = resolve(args.bundle);
const ROUNDS = Number(args.rounds);
// Claims of SciFact's test set (the questions of the figures in docs/benchmarks.md).
const QUESTIONS = ["0-dimensional biomaterials show inductive properties.",
  "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
  "Aspirin inhibits the production of PGE2.",
  "Cancer cells can stimulate the accumulation of intra-tumoural myeloid-derived suppressor cells.",
  "Vitamin D deficiency effects the term of delivery."];

// `kbtools serve` on a free loopback port; resolves with the child and its base URL once it
// listens.
function serve(scratch) {
  const child = spawn(BIN, ["serve", BUNDLE, "--index", join(scratch, "index"), "--addr", "127.0.0.1:0"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((done, fail) => {
    let text = "";
    child.stderr.on("data", (chunk) => {
      text += chunk;
      const m = text.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) done({ child, base: m[1] });
    });
    child.on("error", (e) => fail(new Error(`cannot start ${BIN}: ${e.message}`)));
    child.on("exit", (code) => fail(new Error(`kbtools serve exited ${code}: ${text}`)));
  });
}

// Milliseconds from Enter to the first result on screen; fails without a titled first result.
async function timedSearch(page, query) {
  const box = page.locator("#q");
  await box.fill(query);
  const started = performance.now();
  await box.press("Enter");
  const first = page.locator("ol.results li.result a.title").first();
  await first.waitFor({ state: "visible" });
  const ms = performance.now() - started;
  const title = ((await first.textContent()) || "").trim();
  if (!title) throw new Error(`no title on the first result of ${JSON.stringify(query)}`);
  return ms;
}

async function main() {
  if (!existsSync(BIN)) throw new Error(`no binary at ${BIN} (cargo build --release)`);
  if (!existsSync(BUNDLE)) throw new Error(`no bundle at ${BUNDLE}`);
  if (!(ROUNDS >= 1)) throw new Error(`--rounds ${args.rounds}: not a positive number`);
  const scratch = mkdtempSync(join(tmpdir(), "kbtools-page-latency-"));
  let server = null;
  let browser = null;
  try {
    server = await serve(scratch);
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      args: ["--no-sandbox"],
    });
    const context = await browser.newContext({ locale: "en-US", viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(server.base + "/");
    await page.locator("#q").waitFor();
    await timedSearch(page, "warm-up query about vitamin D");
    console.log(`page latency: ${BIN} serving ${BUNDLE}; ${ROUNDS} rounds of ${QUESTIONS.length} questions`);
    const all = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const times = [];
      for (const q of QUESTIONS) times.push(await timedSearch(page, q));
      all.push(...times);
      console.log(`  round ${round}: ${times.map((t) => t.toFixed(0)).join(", ")} ms`);
    }
    all.sort((a, b) => a - b);
    const median = all.length % 2
      ? all[(all.length - 1) / 2]
      : (all[all.length / 2 - 1] + all[all.length / 2]) / 2;
    console.log(`first result after Enter: median ${median.toFixed(0)} ms, min ${all[0].toFixed(0)} ms, ` +
      `max ${all[all.length - 1].toFixed(0)} ms (${all.length} searches)`);
  } finally {
    if (browser) await browser.close();
    if (server) server.child.kill("SIGTERM");
    rmSync(scratch, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (e) {
  console.error(`page-latency: ${e.message}`);
  process.exit(1);
}
