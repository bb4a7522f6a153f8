'use strict';
// Regenerates src/lookahead.json, the protobufjs JSON descriptor of
// api/proto/lookahead/v1 that the client loads: the package carries its own
// API definition, so an installed copy needs nothing from the repository.
//
//   node scripts/generate.js          rewrite src/lookahead.json
//   node scripts/generate.js --check  exit 1 when it does not match api/proto

const fs = require('node:fs');
const path = require('node:path');
const protobuf = require('protobufjs');

const PROTO_DIR = path.resolve(__dirname, '..', '..', '..', 'api', 'proto');
const OUT = path.resolve(__dirname, '..', 'src', 'lookahead.json');

function generate() {
  const files = fs.readdirSync(path.join(PROTO_DIR, 'lookahead', 'v1'))
    .filter((f) => f.endsWith('.proto'))
    .sort()
    .map((f) => path.join('lookahead', 'v1', f));
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
  // keepCase false: fields in lowerCamelCase (missingIds), as the client's
  // API documents; proto-loader's fromJSON takes the names as they are here.
  root.loadSync(files, { keepCase: false });
  root.resolveAll();
  return `${JSON.stringify(root.toJSON(), null, 1)}\n`;
}

const want = generate();
if (process.argv.includes('--check')) {
  const have = fs.existsSync(OUT) ? fs.readFileSync(OUT, 'utf8') : '';
  if (have !== want) {
    console.error('clients/node: src/lookahead.json is stale; run `npm run generate` in clients/node and commit');
    process.exit(1);
  }
} else {
  fs.writeFileSync(OUT, want);
}
