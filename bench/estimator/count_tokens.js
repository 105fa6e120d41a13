// Reads {"<name>": "<text>", ...} as JSON on stdin and prints
// {"cl100k_base": {"<name>": n, ...}, "o200k_base": {...}} with real BPE counts.
// js-tiktoken ships its ranks, so this runs offline.
const { getEncoding } = require("js-tiktoken");

const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", () => {
  const samples = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const out = {};
  for (const name of ["cl100k_base", "o200k_base"]) {
    const enc = getEncoding(name);
    out[name] = {};
    for (const [key, text] of Object.entries(samples)) {
      out[name][key] = enc.encode(text, [], []).length;
    }
  }
  process.stdout.write(JSON.stringify(out));
});
