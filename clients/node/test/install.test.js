'use strict';
// The package as an application gets it: installed by `npm install` of this
// folder into a fresh project (copied, as from a registry, not linked to the
// repository), then the README's quickstart, kept verbatim in
// examples/quickstart.mjs, run there against a live origin and sidecar.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { startStack } = require('./harness');

const run = promisify(execFile);
const PKG = path.resolve(__dirname, '..');
const QUICKSTART = fs.readFileSync(path.join(PKG, 'examples', 'quickstart.mjs'), 'utf8');

describe('an application installing the package', () => {
  let app;
  let stack;

  before(async () => {
    app = fs.mkdtempSync(path.join(os.tmpdir(), 'lookahead-node-app-'));
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    // --install-links copies the folder the way a registry tarball arrives;
    // --prefer-offline takes the dependencies from npm's cache when it can.
    await run('npm', ['install', '--install-links', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', PKG],
      { cwd: app, timeout: 120_000 });
    fs.copyFileSync(path.join(PKG, 'examples', 'quickstart.mjs'), path.join(app, 'quickstart.mjs'));
    stack = await startStack();
  });

  after(async () => {
    await stack?.stop();
    if (app) fs.rmSync(app, { recursive: true, force: true });
  });

  it('the README shows examples/quickstart.mjs verbatim', () => {
    const readme = fs.readFileSync(path.join(PKG, 'README.md'), 'utf8');
    assert.ok(readme.includes('```js\n' + QUICKSTART + '```\n'), 'README.md lacks examples/quickstart.mjs as a ```js block');
  });

  it('gets a copy with its own dependencies and API descriptor, not a link', () => {
    const installed = path.join(app, 'node_modules', 'lookahead-client');
    assert.ok(!fs.lstatSync(installed).isSymbolicLink(), 'installed as a link into the repository');
    for (const f of ['src/index.js', 'src/index.d.ts', 'src/lookahead.json', 'package.json']) {
      assert.ok(fs.existsSync(path.join(installed, f)), `${f} not installed`);
    }
    assert.ok(!fs.existsSync(path.join(installed, 'test')), 'tests shipped in the package');
    for (const dep of ['@grpc/grpc-js', '@grpc/proto-loader']) {
      assert.ok(fs.existsSync(path.join(app, 'node_modules', dep, 'package.json')), `${dep} not installed`);
    }
  });

  it('runs the quickstart as written against a live sidecar', async () => {
    const { stdout } = await run(process.execPath, ['quickstart.mjs'], {
      cwd: app, timeout: 60_000, env: { ...process.env, LOOKAHEAD_TARGET: stack.target },
    });
    const lines = stdout.trimEnd().split('\n');
    const kids = [1, 2, 3, 4, 5].map((k) => `task-0.${k}`);
    assert.equal(lines[0], `task-0 ${kids.join(',')} true false`);
    const graph = lines.slice(1, 32).map((l) => l.split(' '));
    assert.equal(graph.length, 31, stdout); // 1 + 5 + 25 objects, depth 2
    assert.deepEqual(graph.slice(0, 6).map(([level, id]) => `${level} ${id}`), ['0 task-0', ...kids.map((id) => `1 ${id}`)]);
    assert.deepEqual(graph.map(([level]) => Number(level)), [0, 1, 1, 1, 1, 1, ...Array(25).fill(2)]);
    assert.equal(lines[32], '1 nope');
    assert.match(lines[33], /^note-1 version \d+ invalidated [01]$/);
    assert.equal(lines.length, 34, stdout);
  });
});
