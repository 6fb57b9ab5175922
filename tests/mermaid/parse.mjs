// Parse Mermaid diagrams with the real Mermaid parser (mermaid 11 under a jsdom window), for tests/test_diagram.py.
// Usage: node parse.mjs MODULES_DIR FILE...  (MODULES_DIR holds node_modules/mermaid and node_modules/jsdom)
// Exit 0: every file parses; 1: a syntax error (printed); 3: mermaid or jsdom cannot be loaded.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modulesDir, ...files] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modulesDir), "noop.js"));
let mermaid;
try {
  const { JSDOM } = require("jsdom");
  const dom = new JSDOM("<!doctype html><html><body></body></html>");
  globalThis.window = dom.window;
  globalThis.document = dom.window.document;
  globalThis.DOMParser = dom.window.DOMParser;
  const entry = require.resolve("mermaid");
  mermaid = (await import(pathToFileURL(entry).href)).default;
} catch (err) {
  console.error(`mermaid unavailable: ${err.message}`);
  process.exit(3);
}
mermaid.initialize({ startOnLoad: false });
let failed = 0;
for (const file of files) {
  const text = readFileSync(file, "utf8");
  try {
    const result = await mermaid.parse(text);
    console.log(`${file}: ok (${result.diagramType})`);
  } catch (err) {
    console.error(`${file}: ${err.message}`);
    failed = 1;
  }
}
process.exit(failed);
