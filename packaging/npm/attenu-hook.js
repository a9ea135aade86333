#!/usr/bin/env node
// The `attenu-hook` command of the npm package: finds this platform's binary, installed as
// the optional dependency @attenu-hook/<os>-<cpu>, and runs it with stdio inherited and its
// exit code passed through. Any failure here exits 2: run as a Claude Code hook, exit 2
// blocks the call, where exit 1 would let it through.
"use strict";
const path = require("path");
const { spawnSync } = require("child_process");

const platform = `${process.platform}-${process.arch}`;
const pkg = `@attenu-hook/${platform}`;

function fail(message) {
  process.stderr.write(`attenu-hook: ${message}\n`);
  process.exit(2);
}

let binary;
try {
  binary = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", "attenu-hook");
} catch {
  fail(
    `the package ${pkg}, which holds the binary for this machine, is not installed. ` +
      `Reinstall without --omit=optional (npm install -g attenu-hook); no package exists for ` +
      `${platform} yet: use the Debian package or the static tarball on x86_64 Linux, or build from source.`
  );
}

const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
  fail(`cannot run ${binary}: ${run.error.message}`);
}
if (run.signal) {
  // Die of the same signal, so a caller sees what the binary saw.
  process.kill(process.pid, run.signal);
  fail(`${binary} ended by ${run.signal}`);
}
process.exit(run.status === null ? 2 : run.status);
