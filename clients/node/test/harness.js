'use strict';
// Starts the real origin and sidecar binaries for the tests, on free ports.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const protoLoader = require('@grpc/proto-loader');
const { grpc } = require('../src');

const REPO = path.resolve(__dirname, '..', '..', '..');
const START_TIMEOUT_MS = 30_000;

function binDir() {
  const dir = process.env.LOOKAHEAD_BIN || path.join(REPO, 'bin');
  for (const name of ['origin', 'sidecar']) {
    try {
      fs.accessSync(path.join(dir, name), fs.constants.X_OK);
    } catch {
      // A missing binary is a failure, never a skip.
      throw new Error(`${path.join(dir, name)} is missing; run \`make build\` in ${REPO} or set LOOKAHEAD_BIN`);
    }
  }
  return dir;
}

// Every child still running when node exits is killed, whatever went wrong.
const running = new Set();
process.on('exit', () => {
  for (const p of running) p.child.kill('SIGKILL');
});

class Process {
  constructor(name, child, logFile) {
    this.name = name;
    this.child = child;
    this.logFile = logFile;
    this.grpc = '';
    this.metrics = '';
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      running.delete(this);
      resolve({ code, signal });
    }));
    this.exitCode = null;
    this.exited.then((e) => { this.exitCode = e; });
    running.add(this);
  }

  logTail(n = 40) {
    try {
      return fs.readFileSync(this.logFile, 'utf8').split('\n').slice(-n).join('\n');
    } catch {
      return '';
    }
  }

  /** SIGTERM, then SIGKILL after graceMs; safe to call twice. */
  async stop(graceMs = 10_000) {
    if (this.exitCode) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * Runs binary with --addr-file and resolves once it has written its
 * addresses; name (the binary's by default) names its files in workdir.
 */
async function start(binary, args, workdir, name = path.basename(binary)) {
  const addrFile = path.join(workdir, `${name}.addr`);
  const logFile = path.join(workdir, `${name}.log`);
  const log = fs.openSync(logFile, 'w');
  const child = spawn(binary, [...args, '--addr-file', addrFile], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  const p = new Process(name, child, logFile);
  const deadline = Date.now() + START_TIMEOUT_MS;
  try {
    await new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', resolve);
    });
    for (;;) {
      if (fs.existsSync(addrFile)) {
        for (const line of fs.readFileSync(addrFile, 'utf8').split('\n')) {
          const [kind, addr] = line.trim().split(/\s+/);
          // One grpc line per listener; a unix socket's is a bare path, and
          // the TCP one is what the tests dial.
          if (kind === 'grpc' && addr && !addr.startsWith('/') && !p.grpc) p.grpc = addr;
          if (kind === 'metrics' && addr) p.metrics = addr;
        }
        if (p.grpc) return p;
      }
      if (p.exitCode) throw new Error(`${name} exited (${JSON.stringify(p.exitCode)}) at start:\n${p.logTail()}`);
      if (Date.now() > deadline) throw new Error(`${name} wrote no address in ${START_TIMEOUT_MS} ms:\n${p.logTail()}`);
      await sleep(10);
    }
  } catch (err) {
    await p.stop(2000);
    throw err;
  }
}

// grpc.health.v1 as a protobufjs JSON descriptor: the standard health
// service, built by the same loader without another package.
const healthV1 = grpc.loadPackageDefinition(protoLoader.fromJSON({
  nested: { grpc: { nested: { health: { nested: { v1: { nested: {
    HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
    HealthCheckResponse: {
      fields: { status: { type: 'ServingStatus', id: 1 } },
      nested: { ServingStatus: { values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } } },
    },
    Health: { methods: { Check: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse' } } },
  } } } } } } },
}, { enums: String, defaults: true })).grpc.health.v1;

/** Polls grpc.health.v1.Health/Check (service "") until SERVING. */
async function waitServing(p) {
  const health = new healthV1.Health(p.grpc, grpc.credentials.createInsecure());
  const deadline = Date.now() + START_TIMEOUT_MS;
  let last;
  try {
    while (Date.now() < deadline) {
      if (p.exitCode) throw new Error(`${p.name} exited (${JSON.stringify(p.exitCode)}):\n${p.logTail()}`);
      try {
        const resp = await new Promise((resolve, reject) => health.Check(
          { service: '' }, { deadline: Date.now() + 1000 }, (err, r) => (err ? reject(err) : resolve(r))));
        if (resp.status === 'SERVING') return;
        last = resp.status;
      } catch (err) {
        last = err.message;
      }
      await sleep(20);
    }
    throw new Error(`${p.name} not SERVING after ${START_TIMEOUT_MS} ms (last: ${last}):\n${p.logTail()}`);
  } finally {
    health.close();
  }
}

/**
 * Sums every sample of counter name (all label sets) on /metrics. A labelled
 * counter shows no sample before its first increment; that reads as 0 only
 * when not required, so a misspelt name cannot pass for 0.
 */
async function scrape(metricsAddr, name, required = true) {
  const resp = await fetch(`http://${metricsAddr}/metrics`, { signal: AbortSignal.timeout(5000) });
  if (!resp.ok) throw new Error(`GET /metrics: ${resp.status}`);
  const text = await resp.text();
  let total = 0;
  let seen = false;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m && m[1] === name) {
      total += Number(m[3]);
      seen = true;
    }
  }
  if (!seen && required) throw new Error(`metric ${name} not exposed on ${metricsAddr}/metrics`);
  return total;
}

/** An origin seeded with three db4o task trees and a sidecar in front of it. */
async function startStack() {
  const bins = binDir();
  // Under the system temp dir the unix socket path stays under 108 bytes.
  const workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'lookahead-node-'));
  const procs = [];
  const stack = {
    workdir,
    procs,
    unixSocket: path.join(workdir, 'sidecar.sock'),
    async stop() {
      // Reverse order: the sidecar first, then its origin.
      for (const p of procs.reverse()) await p.stop();
      fs.rmSync(workdir, { recursive: true, force: true });
    },
    counter(name, required = true) {
      return scrape(stack.sidecar.metrics, name, required);
    },
  };
  try {
    stack.origin = await start(path.join(bins, 'origin'), [
      '--listen', '127.0.0.1:0', '--metrics-listen', '', '--data', path.join(workdir, 'data'),
      '--seed', 'tasks', '--task-roots', '3',
    ], workdir);
    procs.push(stack.origin);
    await waitServing(stack.origin);
    stack.sidecar = await start(path.join(bins, 'sidecar'), [
      '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--origin', stack.origin.grpc,
      '--unix-socket', stack.unixSocket, '--health-interval', '100ms',
    ], workdir);
    procs.push(stack.sidecar);
    await waitServing(stack.sidecar);
    stack.target = stack.sidecar.grpc;
    // A second sidecar whose copies go stale after 100 ms and are answered
    // (marked stale) while it refetches them.
    stack.staleSidecar = await start(path.join(bins, 'sidecar'), [
      '--listen', '127.0.0.1:0', '--metrics-listen', '', '--origin', stack.origin.grpc,
      '--ttl', '100ms', '--stale-while-revalidate', '1h', '--health-interval', '100ms',
    ], workdir, 'stale-sidecar');
    procs.push(stack.staleSidecar);
    await waitServing(stack.staleSidecar);
    return stack;
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

module.exports = { startStack, scrape };
