#!/usr/bin/env node
// Makes the npm packages of kbtools and packs them with `npm pack`:
//   --platform NAME --binary PATH   the platform package @kbtools/cli-NAME holding that binary
//                                   (NAME: linux-x64, linux-arm64, darwin-x64, darwin-arm64, or
//                                   host: this machine's, as Node names it)
//   --main                          the main package `kbtools` (npm/kbtools: the launcher)
//   --out DIR                       where the tarballs go (default target/packaging/dist)
// Every package gets Cargo.toml's version; npm/kbtools/package.json must carry the same one, in
// its own version and in each optional dependency, so that what is committed is what ships.
// How the packages fit together: docs/packaging.md.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

// The platforms with a package: npm's os and cpu names (Node's process.platform and process.arch).
const PLATFORMS = {
  "linux-x64": { os: "linux", cpu: "x64", libc: "glibc" },
  "linux-arm64": { os: "linux", cpu: "arm64", libc: "glibc" },
  "darwin-x64": { os: "darwin", cpu: "x64" },
  "darwin-arm64": { os: "darwin", cpu: "arm64" },
};

function fail(message) {
  process.stderr.write(`npm/pack.mjs: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { out: path.join(root, "target", "packaging", "dist"), main: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--main") args.main = true;
    else if (["--platform", "--binary", "--out"].includes(arg)) {
      if (i + 1 >= argv.length) fail(`${arg} needs a value`);
      args[arg.slice(2)] = argv[++i];
    } else fail(`unknown argument ${arg} (known: --platform NAME --binary PATH, --main, --out DIR)`);
  }
  if (!args.main && !args.platform) fail("nothing to pack: give --platform NAME --binary PATH, --main, or both");
  if (args.platform === "host") args.platform = `${process.platform}-${process.arch}`;
  if (args.platform && !PLATFORMS[args.platform]) {
    fail(`unknown platform ${args.platform} (known: ${Object.keys(PLATFORMS).join(", ")})`);
  }
  if (args.platform && !args.binary) fail(`--platform ${args.platform} needs --binary PATH, the built kbtools`);
  return args;
}

function crateVersion() {
  const manifest = fs.readFileSync(path.join(root, "Cargo.toml"), "utf8");
  const pkg = manifest.split(/^\[/m).find((section) => section.startsWith("package]"));
  const match = pkg && pkg.match(/^version\s*=\s*"([^"]+)"/m);
  if (!match) fail("found no version in Cargo.toml's [package] section");
  return match[1];
}

function npmPack(dir, out) {
  const json = execFileSync("npm", ["pack", "--json", "--pack-destination", out], { cwd: dir, encoding: "utf8" });
  const [{ filename }] = JSON.parse(json);
  return path.join(out, filename);
}

const args = parseArgs(process.argv.slice(2));
const version = crateVersion();
const out = path.resolve(args.out);
const stage = path.join(out, "npm-stage");
fs.mkdirSync(out, { recursive: true });
fs.rmSync(stage, { recursive: true, force: true });

const main = JSON.parse(fs.readFileSync(path.join(root, "npm", "kbtools", "package.json"), "utf8"));
const stale = [`version ${main.version}`]
  .concat(Object.entries(main.optionalDependencies).map(([name, v]) => `${name} ${v}`))
  .filter((entry) => !entry.endsWith(` ${version}`));
if (stale.length) {
  fail(`npm/kbtools/package.json is not at Cargo.toml's version ${version}: ${stale.join(", ")}; set each to ${version}`);
}
const expected = Object.keys(PLATFORMS).map((name) => `@kbtools/cli-${name}`).sort();
if (JSON.stringify(Object.keys(main.optionalDependencies).sort()) !== JSON.stringify(expected)) {
  fail(`npm/kbtools/package.json's optionalDependencies must be exactly ${expected.join(", ")} (the platforms of npm/pack.mjs)`);
}

// npm's provenance check wants the repository the workflow ran in (the release workflow's
// GITHUB_REPOSITORY); a local pack leaves the field out.
const repository = process.env.GITHUB_REPOSITORY
  ? { type: "git", url: `git+${process.env.GITHUB_SERVER_URL || "https://github.com"}/${process.env.GITHUB_REPOSITORY}.git` }
  : undefined;

const packed = [];
if (args.platform) {
  const binary = path.resolve(args.binary);
  if (!fs.statSync(binary, { throwIfNoEntry: false })?.isFile()) fail(`--binary ${args.binary} is not a file: build kbtools first`);
  const { os, cpu, libc } = PLATFORMS[args.platform];
  const dir = path.join(stage, `cli-${args.platform}`);
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.copyFileSync(binary, path.join(dir, "bin", "kbtools"));
  fs.chmodSync(path.join(dir, "bin", "kbtools"), 0o755);
  const manifest = {
    name: `@kbtools/cli-${args.platform}`,
    version,
    description: `The kbtools binary for ${os} ${cpu}; install the package \`kbtools\`, which runs it.`,
    license: main.license,
    ...(repository ? { repository } : {}),
    os: [os],
    cpu: [cpu],
    ...(libc ? { libc: [libc] } : {}),
    files: ["bin/kbtools"],
    // Yarn's Plug'n'Play keeps a package with a binary to run unzipped.
    preferUnplugged: true,
  };
  fs.writeFileSync(path.join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  fs.writeFileSync(path.join(dir, "README.md"), `# ${manifest.name}\n\n${manifest.description}\n`);
  fs.copyFileSync(path.join(root, "LICENSE"), path.join(dir, "LICENSE"));
  packed.push(npmPack(dir, out));
}
if (args.main) {
  const dir = path.join(stage, "kbtools");
  fs.cpSync(path.join(root, "npm", "kbtools"), dir, { recursive: true });
  fs.copyFileSync(path.join(root, "LICENSE"), path.join(dir, "LICENSE"));
  if (repository) {
    const staged = path.join(dir, "package.json");
    const manifest = JSON.parse(fs.readFileSync(staged, "utf8"));
    fs.writeFileSync(staged, `${JSON.stringify({ ...manifest, repository }, null, 2)}\n`);
  }
  packed.push(npmPack(dir, out));
}
fs.rmSync(stage, { recursive: true, force: true });
for (const file of packed) process.stdout.write(`${file}\n`);
