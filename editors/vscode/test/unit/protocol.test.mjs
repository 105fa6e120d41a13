// src/rpc/protocol.generated.ts is generated from protocol/schema.json; a schema change without regenerating fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { OUTPUT_PATH, generate } from '../../scripts/gen-protocol.mjs';

test('src/rpc/protocol.generated.ts is what protocol/schema.json generates (run `npm run gen:protocol`)', async () => {
  const committed = fs.readFileSync(OUTPUT_PATH, 'utf8');
  assert.ok(committed === (await generate()), 'protocol.generated.ts is stale: run `npm run gen:protocol`');
});

test('every wire method, notification and server request has its params and result types generated', async () => {
  const text = await generate();
  const schema = JSON.parse(fs.readFileSync(new URL('../../../../protocol/schema.json', import.meta.url), 'utf8'));
  for (const [table, entries] of [['GeneratedMethods', schema.methods], ['GeneratedNotifications', schema.notifications],
    ['GeneratedServerRequests', schema.serverRequests]]) {
    const body = new RegExp(`export interface ${table} \\{\\n([^}]*)\\}`).exec(text)?.[1] ?? '';
    assert.deepEqual(body.trim().split('\n').map((line) => line.trim().split(':')[0].replace(/^'(.*)'$/, '$1')), Object.keys(entries), table);
  }
  for (const name of Object.keys(schema.$defs)) assert.match(text, new RegExp(`export (interface|type) ${name}\\b`));
});

test('WIRE_TEXT is protocol/wire_text.py as schema.json exports it (the one definition of the compaction text)', async () => {
  const text = await generate();
  const schema = JSON.parse(fs.readFileSync(new URL('../../../../protocol/schema.json', import.meta.url), 'utf8'));
  assert.ok(schema.wireText.placeholderPrefix.startsWith('[old tool output compacted'), 'schema.json wireText');
  for (const [name, value] of Object.entries(schema.wireText)) assert.ok(text.includes(`  ${name}: ${JSON.stringify(value)},`), name);
});

test('METHOD_CONTRACT carries each method\'s access and exclusivity as protocol/methods.py declares them', async () => {
  const text = await generate();
  const schema = JSON.parse(fs.readFileSync(new URL('../../../../protocol/schema.json', import.meta.url), 'utf8'));
  for (const [method, spec] of Object.entries(schema.methods)) {
    assert.ok(['read', 'mutate'].includes(spec.access), `${method}.access`);
    assert.ok(text.includes(`  ${method}: { access: '${spec.access}', exclusive: ${spec.exclusive} },`), method);
  }
  assert.ok(text.includes("  compactSession: { access: 'mutate', exclusive: true },"), 'compactSession holds its session');
});
