// Parse Mermaid diagrams with the real Mermaid parser; exit 1 on the first syntax error, 3 when mermaid is missing.
// Usage: NODE_PATH-free: node parse.mjs MODULES_DIR FILE...   (MODULES_DIR holds node_modules/mermaid and jsdom)
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
