// Bundles the extension (Node, CommonJS, `vscode` external), the webview script (browser IIFE) and a
// vscode-free bundle of the RPC layer + HTML builder that the plain-Node tests import.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: 'warning' };

await Promise.all([
  esbuild.build({ ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js',
    platform: 'node', format: 'cjs', target: 'node20', external: ['vscode'] }),
  esbuild.build({ ...common, entryPoints: ['src/webview/main.ts'], outfile: 'dist/webview.js',
    platform: 'browser', format: 'iife', target: 'chrome120' }),
  esbuild.build({ ...common, minify: false, entryPoints: ['src/testing.ts'], outfile: 'out/testing.js',
    platform: 'node', format: 'cjs', target: 'node20' }),
]);
