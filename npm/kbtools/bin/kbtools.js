#!/usr/bin/env node
// The `kbtools` command of the npm package: runs the kbtools binary of the platform package that
// npm installed beside this one (an optional dependency, picked by its `os`, `cpu` and `libc`
// fields), with the same arguments and standard streams, and ends as the binary ended: with its
// exit code, or killed by the same signal. KBTOOLS_BINARY names another binary to run instead.
// Plain Node, no dependencies: it runs before anything else could be installed.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

// `process.platform process.arch` → the platform package that holds its binary
// (npm/pack.mjs makes them; the list is the main package's optionalDependencies).
const PLATFORM_PACKAGES = {
  "linux x64": "@kbtools/cli-linux-x64",
  "linux arm64": "@kbtools/cli-linux-arm64",
  "darwin x64": "@kbtools/cli-darwin-x64",
  "darwin arm64": "@kbtools/cli-darwin-arm64",
};

function fail(message) {
  process.stderr.write(`kbtools (npm launcher): ${message}\n`);
  process.exit(2);
}

function findBinary() {
  const override = process.env.KBTOOLS_BINARY;
  if (override) {
    if (!fs.existsSync(override)) {
      fail(`KBTOOLS_BINARY is set to ${override}, which does not exist; unset it, or point it at a kbtools binary`);
    }
    return override;
  }
  const platform = `${process.platform} ${process.arch}`;
  const pkg = PLATFORM_PACKAGES[platform];
  if (!pkg) {
    fail(
      `no kbtools binary is published for ${platform} (there are: ${Object.keys(PLATFORM_PACKAGES).join(", ")}); ` +
        "build one from a clone of kbtools (`cargo install --locked --path .`) and set KBTOOLS_BINARY to its path",
    );
  }
  let manifest;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    fail(
      `the package ${pkg}, which holds the binary for ${platform}, is not installed. ` +
        "npm leaves optional dependencies out with --omit=optional (or --no-optional) and when it " +
        `could not fetch them: install kbtools again with them (\`npm install kbtools\`, or \`npm install ${pkg}\` ` +
        "beside it), or set KBTOOLS_BINARY to a kbtools binary",
    );
  }
  const binary = path.join(path.dirname(manifest), "bin", "kbtools");
  if (!fs.existsSync(binary)) {
    fail(`${pkg} is installed but has no bin/kbtools (${binary}); install it again`);
  }
  return binary;
}

const binary = findBinary();
const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });

// A signal sent to this process alone (an MCP client stopping its server, `kill`) reaches the
// binary too; a terminal's Ctrl-C reaches both, and kbtools takes a second SIGINT as the first.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
const forward = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of forwarded) process.on(signal, forward);

child.on("error", (error) => {
  let hint = "";
  if (error.code === "ENOENT" && process.platform === "linux") {
    hint = " (the Linux binary needs glibc 2.17 or newer; on musl, such as Alpine, build kbtools with cargo and set KBTOOLS_BINARY)";
  } else if (error.code === "EACCES") {
    hint = ` (the file is not executable: chmod +x ${binary})`;
  }
  fail(`could not run ${binary}: ${error.message}${hint}`);
});

child.on("exit", (code, signal) => {
  if (signal) {
    // End by the same signal, so the caller sees what the binary saw.
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
